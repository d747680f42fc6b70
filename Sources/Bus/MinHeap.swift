/// A binary min-heap: the least element first, a push or a pop in O(log n) swaps. The RPC
/// client's and the gateway's deadlines and text search's walk outward from a point are kept in one.
public struct MinHeap<Element: Comparable> {
    @usableFromInline var entries: [Element] = []

    public init() {}

    /// The least element, not removed.
    @inlinable public var first: Element? { entries.first }

    @inlinable public var isEmpty: Bool { entries.isEmpty }

    @inlinable public mutating func push(_ element: Element) {
        entries.append(element)
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child] < entries[parent] else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the least element; an emptied heap lets go of its storage.
    @inlinable public mutating func pop() -> Element? {
        guard !entries.isEmpty else { return nil }
        entries.swapAt(0, entries.count - 1)
        let top = entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var least = parent
            if left < entries.count, entries[left] < entries[least] { least = left }
            if right < entries.count, entries[right] < entries[least] { least = right }
            guard least != parent else { break }
            entries.swapAt(parent, least)
            parent = least
        }
        if entries.isEmpty { entries = [] }
        return top
    }
}
