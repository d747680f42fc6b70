/// One element of OpenStreetMap XML, whole: a node with its position, a way with its node
/// references, a relation with its members; each with its tags.
enum OSMElement {
    case node(id: Int64, lat: Double, lon: Double, tags: [String: String])
    case way(id: Int64, tags: [String: String], refs: [Int64])
    case relation(id: Int64, tags: [String: String], members: [OSMMember])
}

/// A member of a relation: `way`, `node` or `relation`, its id and its role.
struct OSMMember: Equatable {
    var type: String
    var ref: Int64
    var role: String
}

/// Reads the elements of OpenStreetMap XML one start or end tag at a time, and hands each over
/// whole at its end tag. An element that breaks a bound or lacks a valid id or coordinate is
/// counted (`invalid`) and not handed over, but for a node whose tags broke one: it is handed
/// over without tags, so the ways through it keep it.
struct OSMElementReader {
    /// The most tags on one element.
    static let maxTags = 1000
    /// The most node references of one way (the OpenStreetMap API's limit is 2,000).
    static let maxWayNodes = 2000
    /// The most members of one relation (the API allows 32,000; boundaries and multipolygons
    /// the import reads have far fewer).
    static let maxMembers = 2000
    /// The most UTF-8 bytes of a tag key or value (OpenStreetMap's limit is 255 characters).
    static let maxTagBytes = 1024

    private enum Current {
        case none
        case node(id: Int64, lat: Double, lon: Double)
        case way(id: Int64)
        case relation(id: Int64)
    }
    private var current = Current.none
    private var broken = false
    /// A node whose tags broke a bound: left out as a node of its own, but its position still
    /// counts for the ways through it.
    private var tagsBroken = false
    private var tags: [String: String] = [:]
    private var refs: [Int64] = []
    private var members: [OSMMember] = []
    /// Elements left out: they broke a bound or lacked a valid id or coordinate.
    private(set) var invalid = 0

    /// A start tag, with a lookup of its attributes. Elements other than those named are passed over.
    mutating func start(_ name: String, attribute: (String) -> String?) {
        switch name {
        case "node", "way", "relation":
            broken = false
            tagsBroken = false
            tags.removeAll(keepingCapacity: true)
            refs.removeAll(keepingCapacity: true)
            members.removeAll(keepingCapacity: true)
            current = .none
            guard let id = attribute("id").flatMap(OSMNumber.id) else {
                broken = true
                return
            }
            if name == "way" {
                current = .way(id: id)
            } else if name == "relation" {
                current = .relation(id: id)
            } else if let lat = attribute("lat").flatMap({ OSMNumber.degrees($0, limit: 90) }),
                let lon = attribute("lon").flatMap({ OSMNumber.degrees($0, limit: 180) })
            {
                current = .node(id: id, lat: lat, lon: lon)
            } else {
                broken = true
            }
        case "nd":
            guard case .way = current, !broken else { return }
            guard refs.count < Self.maxWayNodes, let ref = attribute("ref").flatMap(OSMNumber.id) else {
                broken = true
                return
            }
            refs.append(ref)
        case "member":
            guard case .relation = current, !broken else { return }
            guard members.count < Self.maxMembers, let type = attribute("type"), let ref = attribute("ref").flatMap(OSMNumber.id),
                let role = attribute("role")
            else {
                broken = true
                return
            }
            members.append(OSMMember(type: type, ref: ref, role: role))
        case "tag":
            if case .none = current { return }
            guard !broken else { return }
            guard !tagsBroken else { return }
            guard let key = attribute("k"), let value = attribute("v"), tags.count < Self.maxTags,
                key.utf8.count <= Self.maxTagBytes, value.utf8.count <= Self.maxTagBytes
            else {
                if case .node = current { tagsBroken = true } else { broken = true }
                return
            }
            tags[key] = value
        default:
            return
        }
    }

    /// An end tag: the element it ends, when it was whole and valid.
    mutating func end(_ name: String) -> OSMElement? {
        guard name == "node" || name == "way" || name == "relation" else { return nil }
        defer { current = .none }
        if broken {
            invalid += 1
            broken = false
            return nil
        }
        switch current {
        case .none: return nil
        case .node(let id, let lat, let lon):
            if tagsBroken { invalid += 1 }
            return .node(id: id, lat: lat, lon: lon, tags: tagsBroken ? [:] : tags)
        case .way(let id): return .way(id: id, tags: tags, refs: refs)
        case .relation(let id): return .relation(id: id, tags: tags, members: members)
        }
    }
}
