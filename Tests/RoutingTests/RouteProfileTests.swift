import ContentImport
import Testing

@testable import Routing

/// Ways' tags read as Routino's tagging.xml reads them, and the profiles' speeds.
@Suite struct RouteProfileTests {
    /// (foot, bicycle, motorcar) for a way's tags.
    func allowed(_ tags: [String: String]) -> [Bool]? {
        WayAccess(tags: tags).map { [$0.foot, $0.bicycle, $0.motorcar] }
    }

    @Test func streetTypesHaveRoutinosDefaultAccess() {
        #expect(allowed(["highway": "motorway"]) == [false, false, true])
        #expect(allowed(["highway": "trunk_link"]) == [false, true, true])
        #expect(allowed(["highway": "residential"]) == [true, true, true])
        #expect(allowed(["highway": "living_street"]) == [true, true, true])
        #expect(allowed(["highway": "footway"]) == [true, false, false])
        #expect(allowed(["highway": "pedestrian"]) == [true, false, false])
        #expect(allowed(["highway": "cycleway"]) == [true, true, false])
        #expect(allowed(["highway": "steps"]) == [true, false, false])
        #expect(allowed(["highway": "track"]) == [true, true, false])
        #expect(allowed(["highway": "construction"]) == nil)
        #expect(allowed(["highway": "street_lamp"]) == nil)
        #expect(allowed(["building": "yes"]) == nil)
        #expect(allowed(["highway": "pedestrian", "area": "yes"]) == nil)
    }

    @Test func accessTagsAddAndTakeAway() {
        #expect(allowed(["highway": "footway", "bicycle": "yes"]) == [true, true, false])
        #expect(allowed(["highway": "footway", "bicycle": "designated"]) == [true, true, false])
        #expect(allowed(["highway": "residential", "access": "private"]) == [false, false, false])
        #expect(allowed(["highway": "service", "access": "no", "foot": "yes"]) == [true, false, false])
        #expect(allowed(["highway": "residential", "motor_vehicle": "no"]) == [true, true, false])
        #expect(allowed(["highway": "residential", "vehicle": "no"]) == [true, false, false])
        #expect(allowed(["highway": "residential", "motorcar": "destination"]) == [true, true, false])
        #expect(allowed(["highway": "trunk", "sidewalk": "both"]) == [true, true, true])
        #expect(allowed(["highway": "primary", "motorroad": "yes"]) == [false, false, true])
        #expect(allowed(["highway": "pedestrian", "access:bicycle": "yes"]) == [true, true, false])
        // A transport's own tag with any value but yes takes it away, as Routino reads it.
        #expect(allowed(["highway": "tertiary", "bicycle": "use_sidepath"]) == [true, false, true])
        #expect(allowed(["highway": "residential", "foot": "use_sidepath"]) == [false, true, true])
        // Ferries carry what they name (and what is smaller).
        #expect(allowed(["route": "ferry"]) == [false, false, false])
        #expect(allowed(["route": "ferry", "foot": "yes"]) == [true, false, false])
        #expect(allowed(["route": "ferry", "motor_vehicle": "yes"]) == [false, false, true])
        #expect(allowed(["route": "ferry", "bicycle": "yes"]) == [true, true, false])
    }

    @Test func oneWaysBindBicyclesAndCarsNotWalkers() throws {
        let oneWay = try #require(WayAccess(tags: ["highway": "residential", "oneway": "yes"]))
        #expect(oneWay.directions(.motorcar) == (true, false))
        #expect(oneWay.directions(.bicycle) == (true, false))
        #expect(oneWay.directions(.foot) == (true, true))
        let reversed = try #require(WayAccess(tags: ["highway": "residential", "oneway": "-1"]))
        #expect(reversed.directions(.motorcar) == (false, true))
        let roundabout = try #require(WayAccess(tags: ["highway": "primary", "junction": "roundabout"]))
        #expect(roundabout.directions(.motorcar) == (true, false))
        let contraflow = try #require(WayAccess(tags: ["highway": "residential", "oneway": "yes", "cycleway": "opposite_lane"]))
        #expect(contraflow.directions(.bicycle) == (true, true))
        #expect(contraflow.directions(.motorcar) == (true, false))
        let exempt = try #require(WayAccess(tags: ["highway": "residential", "oneway": "yes", "oneway:bicycle": "no"]))
        #expect(exempt.directions(.bicycle) == (true, true))
        let motorway = try #require(WayAccess(tags: ["highway": "motorway"]))
        #expect(motorway.directions(.motorcar) == (true, false))
        let twoWayMotorway = try #require(WayAccess(tags: ["highway": "motorway", "oneway": "no"]))
        #expect(twoWayMotorway.directions(.motorcar) == (true, true))
    }

    @Test func speedsAreRoutinosCappedByMaxspeed() {
        #expect(RouteProfile.motorcar.metresPerSecond(.primary, maxSpeedKph: nil) == 96 / 3.6)
        #expect(RouteProfile.motorcar.metresPerSecond(.primary, maxSpeedKph: 50) == 50 / 3.6)
        #expect(RouteProfile.motorcar.metresPerSecond(.residential, maxSpeedKph: 80) == 48 / 3.6)
        #expect(RouteProfile.motorcar.metresPerSecond(.track, maxSpeedKph: nil) == nil)
        #expect(RouteProfile.bicycle.metresPerSecond(.cycleway, maxSpeedKph: 10) == 10 / 3.6)
        #expect(RouteProfile.bicycle.metresPerSecond(.steps, maxSpeedKph: nil) == nil)
        #expect(RouteProfile.foot.metresPerSecond(.primary, maxSpeedKph: 2) == 4.8 / 3.6)
        #expect(RouteProfile.foot.metresPerSecond(.ferry, maxSpeedKph: nil) == 10 / 3.6)
        #expect(WayAccess.speed("50") == 50)
        #expect(WayAccess.speed("30 mph") == 30 * 1.609)
        #expect(WayAccess.speed("FI:urban") == nil)
        #expect(WayAccess.speed("walk") == nil)
    }

    @Test func barriersStopWhatTheyStop() {
        let bollard = NodeAccess(tags: ["barrier": "bollard"])
        #expect([bollard.foot, bollard.bicycle, bollard.motorcar] == [true, true, false])
        let stile = NodeAccess(tags: ["barrier": "stile"])
        #expect([stile.foot, stile.bicycle, stile.motorcar] == [true, false, false])
        let gate = NodeAccess(tags: ["barrier": "gate"])
        #expect([gate.foot, gate.bicycle, gate.motorcar] == [true, true, true])
        let privateGate = NodeAccess(tags: ["barrier": "gate", "access": "private"])
        #expect([privateGate.foot, privateGate.bicycle, privateGate.motorcar] == [false, false, false])
    }

    @Test func theStreetReaderKeepsStreetsAndRestrictionsThroughANode() throws {
        let xml = """
            <osm><node id="1" lat="60" lon="25"/><node id="2" lat="60.001" lon="25"><tag k="barrier" v="bollard"/></node>\
            <node id="3" lat="60.002" lon="25"><tag k="amenity" v="bench"/></node>\
            <way id="10"><nd ref="1"/><nd ref="2"/><tag k="highway" v="residential"/><tag k="surface" v="asphalt"/></way>\
            <way id="11"><nd ref="2"/><nd ref="3"/><tag k="highway" v="residential"/></way>\
            <way id="12"><nd ref="2"/><nd ref="99"/><tag k="highway" v="residential"/></way>\
            <way id="13"><nd ref="1"/><nd ref="3"/><tag k="building" v="yes"/></way>\
            <relation id="20"><member type="way" ref="10" role="from"/><member type="node" ref="2" role="via"/>\
            <member type="way" ref="11" role="to"/><tag k="type" v="restriction"/><tag k="restriction" v="no_straight_on"/>\
            <tag k="except" v="bicycle"/></relation>\
            <relation id="21"><member type="way" ref="10" role="from"/><member type="way" ref="11" role="via"/>\
            <member type="way" ref="11" role="to"/><tag k="type" v="restriction"/><tag k="restriction" v="no_u_turn"/></relation>\
            <relation id="22"><member type="way" ref="10" role="from"/><member type="node" ref="2" role="via"/>\
            <member type="way" ref="11" role="to"/><tag k="type" v="restriction"/><tag k="restriction:hgv" v="no_straight_on"/>\
            <tag k="restriction:motorcar" v="only_straight_on"/><tag k="restriction:psv" v="no_straight_on"/></relation>\
            </osm>
            """
        let streets = try OSMStreets(bytes: Array(xml.utf8))
        #expect(streets.ways.map(\.id) == [10, 11])
        #expect(streets.ways[0].tags == ["highway": "residential"], "tags routing does not read are not kept")
        #expect(streets.nodes.map(\.id) == [1, 2, 3])
        #expect(streets.nodes[1].tags == ["barrier": "bollard"] && streets.nodes[2].tags.isEmpty)
        #expect(streets.counts.waysMissingNodes == 1)
        #expect(streets.counts.restrictionsLeftOut == 1, "through a way")
        let restriction = try #require(streets.restrictions.first)
        #expect(restriction.kind == .no && restriction.from == 10 && restriction.to == 11 && restriction.via == 1)
        #expect(restriction.transports.contains("motorcar") && !restriction.transports.contains("bicycle"))
        // One relation with a value per transport is a restriction per value.
        let perTransport = streets.restrictions.filter { $0.id == 22 }.map { "\($0.kind) \($0.transports.sorted())" }
        #expect(perTransport == [#"no ["hgv", "psv"]"#, #"only ["motorcar"]"#], "\(perTransport)")
    }
}
