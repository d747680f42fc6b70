import Bus
import Geo

/// A page of "the things within a radius of a point, nearest first", from an index that
/// reads points nearest first (SQLite's R*Tree with `nearest_first`), at a bounded cost.
///
/// A thing (an id) is as far as its nearest point: a tour has many stops, an annotation one
/// point. The index gives points nearest first by their rounded boxes, so a point may come up
/// to `slack` metres after a nearer one: a thing is answered once no point left to read can
/// be nearer. A later page asks the index only for points from its cursor's distance on; a
/// thing whose nearest point is nearer than that was served before, and a thing with several
/// points found past the cursor is asked about (`servedBefore`) before it is answered.
///
/// A page reads at most `budget` points (and the points `servedBefore` reads), and always
/// gets past its cursor's distance: when the budget is spent, the page ends with the things
/// no unread point can be nearer than, fewer than `limit` or none, and its cursor goes on from
/// there. Points all at one distance are read together, so a pile on one spot is read whole.
public struct NearestPage {
    /// Where a page ended: the last thing's distance and id, or a distance and `Int64.max`.
    public typealias Cursor = (distance: Double, id: Int64)

    public let center: Coordinate
    public let radius: Double
    public let after: Cursor?
    public let limit: Int
    public let budget: Int
    /// How much nearer than the last point read a point not read yet may be.
    public let slack: Double

    public init(center: Coordinate, radius: Double, after: Cursor?, limit: Int, budget: Int, slack: Double) {
        self.center = center
        self.radius = radius
        self.after = after
        self.limit = limit
        self.budget = budget
        self.slack = slack
    }

    /// The distances to ask the index for: from a little nearer than the cursor to a little
    /// past the radius (the page measures each point itself).
    public var range: (from: Double, to: Double) { (max(0, (after?.distance ?? 0) - 2 * slack), radius + 2 * slack) }

    /// Whether a thing with a point found past the cursor has a point nearer than `distance`,
    /// and how many points it read to tell.
    public typealias ServedBefore = (_ id: Int64, _ distance: Double) throws -> (served: Bool, read: Int)

    /// The page. `points` reads the index within `range`, nearest first, handing each point
    /// to `take` until it answers false. A point of a thing `hidden` names counts as read and
    /// is never answered.
    public func page(
        points: (_ take: (Int64, Coordinate) throws -> Bool) throws -> Void, servedBefore: ServedBefore? = nil,
        hidden: ((Int64) -> Bool)? = nil
    ) throws -> (items: [Cursor], next: Cursor?) {
        let start = after?.distance ?? 0
        var best: [Int64: Double] = [:]
        var waiting = MinHeap<Candidate>()
        var served = Set<Int64>()
        var answered = Set<Int64>()
        var page: [Cursor] = []
        var spent = 0
        // No point left to read is nearer than this.
        var frontier = -Double.infinity
        var outOfBudget = false

        /// Answers the waiting things nearer than the frontier, nearest first; true once the page is over full.
        func answerUpTo(_ frontier: Double) throws -> Bool {
            while let first = waiting.first, first.distance < frontier {
                _ = waiting.pop()
                let top = (distance: first.distance, id: first.id)
                guard best[top.id] == top.distance, !answered.contains(top.id), !served.contains(top.id) else { continue }
                if let after, (top.distance, top.id) <= (after.distance, after.id) {
                    served.insert(top.id)
                    continue
                }
                if start > 0, let servedBefore {
                    let answer = try servedBefore(top.id, start)
                    spent += answer.read
                    if answer.served {
                        served.insert(top.id)
                        continue
                    }
                }
                answered.insert(top.id)
                page.append(top)
                if page.count > limit { return true }
            }
            return false
        }

        var full = false
        try points { id, point in
            spent += 1
            let distance = point.distance(to: center)
            frontier = max(frontier, distance - slack)
            if hidden?(id) == true {
                // Read, and passed over.
            } else if distance < start {
                // Its thing is nearer than the cursor: served before.
                served.insert(id)
            } else if distance <= radius, distance < best[id] ?? .infinity, !served.contains(id), !answered.contains(id) {
                best[id] = distance
                waiting.push(Candidate(distance: distance, id: id))
            }
            full = try answerUpTo(frontier)
            if full { return false }
            // Out of budget, once the cursor it would give is past this page's own.
            if spent >= budget && frontier.nextDown > start {
                outOfBudget = true
                return false
            }
            return true
        }
        if !full && !outOfBudget { full = try answerUpTo(.infinity) }
        if full {
            let kept = Array(page.prefix(limit))
            return (kept, kept.last)
        }
        // Out of budget: every thing nearer than the frontier is in this page or an earlier one.
        return (page, outOfBudget ? (frontier.nextDown, Int64.max) : nil)
    }

    /// A thing waiting to be answered: nearest first, ties by id.
    private struct Candidate: Comparable {
        var distance: Double
        var id: Int64
        static func < (a: Candidate, b: Candidate) -> Bool { (a.distance, a.id) < (b.distance, b.id) }
    }
}
