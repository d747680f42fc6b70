/// A way to travel, with what it may use and how fast it goes. The rules follow Routino's
/// `tagging.xml` and the speeds its `profiles.xml` (Debian's routino 3.3.3), so that Routino's
/// own `router` can check our routes: Protocols/routing.md lists them.
public enum RouteProfile: String, Sendable, CaseIterable, Hashable {
    case foot, bicycle, motorcar

    /// Metres per second on a street of `type`, nil when the profile may not use it at all.
    ///
    /// Walking is 4.8 km/h everywhere (our estimate's speed); cycling is Routino's 20 km/h and
    /// driving Routino's speeds by street type, each no faster than the way's `maxspeed`; every
    /// ferry goes at 10 km/h. Routino drives tracks at 16 km/h but never chooses them (its
    /// preference for them is 0): we leave them out.
    func metresPerSecond(_ type: StreetType, maxSpeedKph: Double?) -> Double? {
        let kph: Double
        switch (self, type) {
        case (_, .ferry): kph = 10
        case (.foot, .motorway): return nil
        case (.foot, _): return 4.8 / 3.6
        case (.bicycle, .motorway), (.bicycle, .steps): return nil
        case (.bicycle, _): kph = 20
        case (.motorcar, .motorway): kph = 112
        case (.motorcar, .trunk), (.motorcar, .primary): kph = 96
        case (.motorcar, .secondary): kph = 88
        case (.motorcar, .tertiary): kph = 80
        case (.motorcar, .unclassified): kph = 64
        case (.motorcar, .residential): kph = 48
        case (.motorcar, .service): kph = 32
        case (.motorcar, .track), (.motorcar, .cycleway), (.motorcar, .path), (.motorcar, .steps): return nil
        }
        // `WayAccess.speed` reads only limits above 0.
        let limited = self == .foot ? kph : min(kph, maxSpeedKph ?? kph)
        return limited / 3.6
    }

    /// Whether one-way streets bind: for bicycles and cars, not for walkers.
    var obeysOneWay: Bool { self != .foot }
    /// The `restriction:…` transport a turn restriction must name for this profile, nil for
    /// walkers (who may turn anywhere).
    var restrictedTransport: String? {
        switch self {
        case .foot: nil
        case .bicycle: "bicycle"
        case .motorcar: "motorcar"
        }
    }
}

/// Routino's street types, which `highway=*` values map onto.
public enum StreetType: String, Sendable, CaseIterable {
    case motorway, trunk, primary, secondary, tertiary, unclassified, residential, service, track, cycleway, path, steps, ferry
}

/// What a way allows, read from its tags as Routino's `tagging.xml` reads them.
struct WayAccess: Equatable {
    var type: StreetType
    var foot = false, bicycle = false, motorcar = false
    /// 1 one way along the way's nodes, -1 against them, 0 both ways.
    var oneWay: Int8 = 0
    /// Bicycles may go both ways on a one-way street (`cycleway=opposite`, `oneway:bicycle=no`).
    var cycleBothWays = false
    var maxSpeedKph: Double?

    func allows(_ profile: RouteProfile) -> Bool {
        switch profile {
        case .foot: foot
        case .bicycle: bicycle
        case .motorcar: motorcar
        }
    }

    /// The directions `profile` may travel: (along the nodes, against them).
    func directions(_ profile: RouteProfile) -> (along: Bool, against: Bool) {
        guard allows(profile) else { return (false, false) }
        guard profile.obeysOneWay, !(profile == .bicycle && cycleBothWays) else { return (true, true) }
        return (oneWay >= 0, oneWay <= 0)
    }

    /// Access values as Routino normalises them: these mean yes…
    static let yesValues: Set<String> = ["yes", "designated", "permissive", "true", "public", "official", "1"]
    /// …and these no (a car may not pass on `destination`: Routino's choice, kept so its router can check ours).
    static let noValues: Set<String> = [
        "no", "destination", "permit", "customer", "customers", "delivery", "residents", "private", "unsuitable", "limited", "restricted",
        "agricultural", "forestry", "false", "0",
    ]

    /// Tags with their values read as Routino reads them: `yes`, `no`, or as written.
    static func normalised(_ tags: [String: String]) -> [String: String] {
        tags.mapValues { value in yesValues.contains(value) ? "yes" : noValues.contains(value) ? "no" : value }
    }

    /// A way's access, or nil when it is not a street any profile reads (`highway=construction`,
    /// `highway=street_lamp` on a way, an area, no highway at all).
    init?(tags: [String: String]) {
        var tags = tags
        for key in ["foot", "bicycle", "motorcar"] where tags[key] == nil {
            if let value = tags["access:" + key] { tags[key] = value }
        }
        if tags["route"] == "ferry" { tags["highway"] = "ferry" }
        // An area (`area=yes`: a square, a parking area) is not a street, as Routino reads it.
        guard let highway = tags["highway"], let type = Self.streetType(highway), tags["area"] != "yes" else { return nil }
        self.type = type
        switch type {
        case .motorway:
            (motorcar, oneWay) = (true, 1)
        case .trunk:
            (bicycle, motorcar) = (true, true)
        case .primary, .secondary, .tertiary, .unclassified, .residential, .service:
            (foot, bicycle, motorcar) = (true, true, true)
        case .track:
            (foot, bicycle) = (true, true)
        case .cycleway:
            (foot, bicycle) = (true, true)
        case .path:
            foot = true
            if highway == "bridleway" { bicycle = true }
        case .steps:
            foot = true
        case .ferry:
            // Routino's heuristics: a ferry carries what it names, and what is smaller.
            let access = tags["access"] == "yes"
            let vehicle = access || tags["vehicle"] == "yes"
            let motor = vehicle || tags["motor_vehicle"] == "yes"
            let cars = motor || ["motorcar", "goods", "psv", "hgv"].contains { tags[$0] == "yes" }
            bicycle = vehicle || tags["bicycle"] == "yes"
            motorcar = cars
            foot = access || tags["foot"] == "yes" || tags["bicycle"] == "yes"
        }
        let normalised = Self.normalised(tags)
        if let access = normalised["access"], access != "yes" {
            (foot, bicycle, motorcar) = (access == "foot", false, false)
        }
        switch normalised["designation"] {
        case "restricted_byway", "permissive_bridleway", "public_bridleway", "bridleway", "public_cycleway":
            (foot, bicycle) = (true, true)
        case "byway_open_to_all_traffic", "public_highway", "public_byway", "byway":
            (foot, bicycle, motorcar) = (true, true, true)
        case "permissive_footpath", "public_footpath", "footpath":
            foot = true
        default:
            break
        }
        if normalised["motorroad"] == "yes" { (foot, bicycle) = (false, false) }
        if ["sidewalk", "both", "left", "right", "yes", "crossing"].contains(normalised["footway"] ?? "") { foot = true }
        if ["both", "left", "right", "yes", "separate"].contains(normalised["sidewalk"] ?? "") { foot = true }
        if let cycleway = normalised["cycleway"] {
            if ["lane", "track", "shared_lane", "opposite", "crossing", "yes", "opposite_lane", "opposite_track"].contains(cycleway) { bicycle = true }
            if ["opposite", "opposite_lane", "opposite_track"].contains(cycleway) { cycleBothWays = true }
        }
        if normalised["oneway:bicycle"] == "no" { (bicycle, cycleBothWays) = (true, true) }
        if let vehicle = normalised["vehicle"], vehicle != "yes" { (bicycle, motorcar) = (false, false) }
        if let motor = normalised["motor_vehicle"], motor != "yes" { motorcar = false }
        // A transport's own tag decides last: yes allows, any other value (`no`,
        // `use_sidepath`, `dismount`) does not, as Routino reads them.
        for (key, keyPath) in [("foot", \WayAccess.foot), ("bicycle", \.bicycle), ("motorcar", \.motorcar)] {
            if let value = normalised[key] { self[keyPath: keyPath] = value == "yes" }
        }
        if normalised["junction"] == "roundabout" { oneWay = 1 }
        switch normalised["oneway"] {
        case "yes": oneWay = 1
        case "-1": oneWay = -1
        case "no": oneWay = 0
        default: break
        }
        maxSpeedKph = tags["maxspeed"].flatMap(Self.speed)
    }

    /// Routino's street type for a `highway` value (after `route=ferry` became `ferry`).
    static func streetType(_ highway: String) -> StreetType? {
        switch highway {
        case "motorway", "motorway_link": .motorway
        case "trunk", "trunk_link": .trunk
        case "primary", "primary_link": .primary
        case "secondary", "secondary_link": .secondary
        case "tertiary", "tertiary_link": .tertiary
        case "unclassified", "minor", "road": .unclassified
        case "residential", "living_street": .residential
        case "service", "access", "services", "rest_area", "layby": .service
        case "track", "byway", "unsurfaced", "unpaved": .track
        case "cycleway": .cycleway
        case "path", "footway", "bridleway", "pedestrian", "walkway", "trail": .path
        case "steps": .steps
        case "ferry": .ferry
        default: nil
        }
    }

    /// A `maxspeed` in km/h: a number, then `mph` or `knots` or nothing (km/h); other forms
    /// (`FI:urban`, `walk`) are no limit.
    static func speed(_ text: String) -> Double? {
        var digits = Substring(text)
        let number = digits.prefix { $0.isNumber || $0 == "." }
        guard let value = Double(number), value > 0 else { return nil }
        digits = digits.dropFirst(number.count).drop { $0 == " " }
        if digits.hasPrefix("mph") { return value * 1.609 }
        if digits.hasPrefix("knots") { return value * 1.852 }
        return value
    }
}

/// What a node lets pass (a bollard stops cars, a stile bicycles and cars), as Routino reads
/// `barrier=*` and a node's access tags. Every profile passes a node with none of them.
struct NodeAccess {
    var foot = true, bicycle = true, motorcar = true

    init(tags: [String: String]) {
        switch tags["barrier"] {
        case "kissing_gate", "footgate", "stile", "v_stile", "turnstile", "squeeze", "squeeze_stile", "horse_stile", "horse_jump",
            "step_over", "cycle_barrier":
            (bicycle, motorcar) = (false, false)
        case "motorcycle_barrier", "bollard", "post", "car_barrier", "car_trap":
            motorcar = false
        default:
            break
        }
        let normalised = WayAccess.normalised(tags)
        if let access = normalised["access"], access != "yes" { (foot, bicycle, motorcar) = (access == "foot", false, false) }
        if let vehicle = normalised["vehicle"], vehicle != "yes" { (bicycle, motorcar) = (false, false) }
        if let motor = normalised["motor_vehicle"], motor != "yes" { motorcar = false }
        for (key, keyPath) in [("foot", \NodeAccess.foot), ("bicycle", \.bicycle), ("motorcar", \.motorcar)] {
            if let value = normalised[key] { self[keyPath: keyPath] = value == "yes" }
        }
    }

    func allows(_ profile: RouteProfile) -> Bool {
        switch profile {
        case .foot: foot
        case .bicycle: bicycle
        case .motorcar: motorcar
        }
    }
}
