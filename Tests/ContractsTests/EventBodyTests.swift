import Bus
import Contracts
import Foundation
import Testing

/// The event envelopes the protocol documents show, by event type.
enum ProtocolDocs {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Protocols")

    /// Every line of `file` that is an event envelope of `type`, as the body's JSON text.
    static func eventBodies(_ type: String, in file: String) throws -> [Data] {
        let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
        return try text.split(separator: "\n").compactMap { line -> Data? in
            guard line.hasPrefix(#"{"v":1,"seq":"#), line.contains(#""type":"\#(type)""#) else { return nil }
            let envelope = Data(line.utf8)
            let object = try #require(try JSONSerialization.jsonObject(with: envelope) as? [String: Any])
            return try JSONSerialization.data(withJSONObject: try #require(object["body"]))
        }
    }

    /// A JSON document as Foundation objects, to compare two texts member by member.
    static func object(_ json: Data) throws -> NSObject {
        try #require(try JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed]) as? NSObject)
    }
}

/// Each body decodes as its declared type and encodes back to the same members: a renamed,
/// dropped or retyped field fails here.
func roundTrips<Body: Codable & Equatable>(_ type: Body.Type, _ json: Data) throws -> Body {
    let decoded = try JSONCoding.decoder.decode(Body.self, from: json)
    let encoded = try JSONCoding.encoder.encode(decoded)
    #expect(try ProtocolDocs.object(encoded) == ProtocolDocs.object(json), "\(String(decoding: json, as: UTF8.self))")
    #expect(try JSONCoding.decoder.decode(Body.self, from: encoded) == decoded)
    return decoded
}

@Suite struct EventBodyTests {
    @Test func catalogEventsAsTheDocsShowThem() throws {
        let upserted = try ProtocolDocs.eventBodies(CatalogEvents.upserted, in: "catalog.md")
        let deleted = try ProtocolDocs.eventBodies(CatalogEvents.deleted, in: "catalog.md")
        try #require(!upserted.isEmpty && !deleted.isEmpty)
        for body in upserted {
            let place = try roundTrips(Place.self, body)
            // A follower's reading of the same body is the place's summary.
            #expect(try JSONCoding.decoder.decode(PlaceSummary.self, from: body) == PlaceSummary(place))
        }
        for body in deleted { _ = try roundTrips(PlaceDeleted.self, body) }
        #expect(try roundTrips(PlaceDeleted.self, Data(#"{"id":4}"#.utf8)) == PlaceDeleted(id: 4))
    }

    @Test func tourEventsAsTheDocsShowThem() throws {
        let upserted = try ProtocolDocs.eventBodies(TourEvents.upserted, in: "tours.md")
        let deleted = try ProtocolDocs.eventBodies(TourEvents.deleted, in: "tours.md")
        try #require(!upserted.isEmpty && !deleted.isEmpty)
        for body in upserted { _ = try roundTrips(Tour.self, body) }
        for body in deleted { _ = try roundTrips(TourDeleted.self, body) }
    }

    @Test func favoritesEventsAsTheDocsShowThem() throws {
        let counted = try ProtocolDocs.eventBodies(FavoritesEvents.counted, in: "favorites.md")
        try #require(!counted.isEmpty)
        for body in counted { _ = try roundTrips(PlaceCounted.self, body) }
        #expect(String(decoding: try JSONCoding.encoder.encode(PlaceCounted(placeId: 2, saves: 1, visits30d: 0)), as: UTF8.self)
                == #"{"place_id":2,"saves":1,"visits_30d":0}"#)
    }

    @Test func searchEventsAsTheDocsShowThem() throws {
        let performed = try ProtocolDocs.eventBodies(SearchEvents.performed, in: "search.md")
        try #require(!performed.isEmpty)
        for body in performed { _ = try roundTrips(SearchPerformed.self, body) }
        // The hand-written body is the encoder's, with and without a point, for hostile text too.
        for near in [nil, SearchPerformed.Point(lat: -33.85, lon: 151.21), SearchPerformed.Point(lat: 0, lon: -180), SearchPerformed.Point(lat: 1e-05, lon: 12.5)] {
            for q in ["bondi", "quote \" back\\slash / tab\t nul\u{0} bell\u{7} del\u{7f}", "Café 東京 🏖️", ""] {
                let body = SearchPerformed(userId: 9_007_199_254_740_993, q: q, near: near, at: "2026-06-01T00:00:05.004Z")
                #expect(body.json == (try JSONCoding.encoder.encode(body)), "\(q) \(String(describing: near))")
            }
        }
        // `near` is left out when the search named no point.
        #expect(String(decoding: try JSONCoding.encoder.encode(SearchPerformed(userId: 7, q: "bondi", near: nil, at: "2026-06-01T00:00:05.004Z")), as: UTF8.self)
                == #"{"at":"2026-06-01T00:00:05.004Z","q":"bondi","user_id":7}"#)
    }

    @Test func socialEventsAsTheDocsShowThem() throws {
        let ratings = try ProtocolDocs.eventBodies(SocialEvents.ratingUpdated, in: "social.md")
        let ended = try ProtocolDocs.eventBodies(SocialEvents.sessionEnded, in: "social.md")
        let roles = try ProtocolDocs.eventBodies(SocialEvents.roleChanged, in: "social.md")
        let deleted = try ProtocolDocs.eventBodies(SocialEvents.userDeleted, in: "social.md")
        try #require(!ratings.isEmpty && !ended.isEmpty && !roles.isEmpty && !deleted.isEmpty)
        for body in ratings { _ = try roundTrips(RatingUpdated.self, body) }
        for body in ended { _ = try roundTrips(SessionEnded.self, body) }
        for body in roles { _ = try roundTrips(RoleChange.self, body) }
        for body in deleted { _ = try roundTrips(UserDeleted.self, body) }
        // Sorted keys, as the publisher writes them: the text itself.
        let rating = String(decoding: try JSONCoding.encoder.encode(RatingUpdated(placeId: 1, average: 3.5, count: 2)), as: UTF8.self)
        #expect(rating == #"{"average":3.5,"count":2,"place_id":1}"#)
        let recent = String(decoding: try JSONCoding.encoder.encode(RatingUpdated(placeId: 1, average: 3.5, count: 2, reviews30d: 1)), as: UTF8.self)
        #expect(recent == #"{"average":3.5,"count":2,"place_id":1,"reviews_30d":1}"#)
        #expect(try JSONCoding.decoder.decode(RatingUpdated.self, from: Data(rating.utf8)).reviews30d == nil)
        #expect(String(decoding: try JSONCoding.encoder.encode(RoleChange(userId: 2, role: "admin")), as: UTF8.self) == #"{"role":"admin","user_id":2}"#)
        #expect(String(decoding: try JSONCoding.encoder.encode(SessionEnded(userId: 1)), as: UTF8.self) == #"{"user_id":1}"#)
        for type in [SocialEvents.deviceRegistered, SocialEvents.deviceRevoked] {
            let devices = try ProtocolDocs.eventBodies(type, in: "social.md")
            try #require(!devices.isEmpty, "\(type)")
            for body in devices { _ = try roundTrips(DeviceChange.self, body) }
        }
        #expect(throws: ServiceError.invalid("device_id", "must be 1 to 64 bytes")) { try DeviceChange.checkDeviceId(String(repeating: "é", count: 33)) }
    }

    @Test func aPlaceHasItsMemberNames() throws {
        let place = Place(id: 1, name: "Opera House", category: "attraction", lat: -33.8568, lon: 151.2153, address: "Bennelong Point",
                          phone: "+61 2 9250 7111", website: "https://www.sydneyoperahouse.com", priceLevel: 3, description: "Arts",
                          openingHours: [OpeningPeriod(day: 1, open: "09:00", close: "17:00")], photos: [Photo(url: "https://example.org/o.jpg")],
                          popularity: 99.5, externalIds: ["osm": "way/5163069"], createdAt: "2026-11-29T17:49:39.741Z",
                          updatedAt: "2026-11-29T17:49:39.742Z", version: 2, timezone: "Australia/Sydney",
                          nameI18n: ["en": "Opera House", "ru": "Сиднейский оперный театр"], descriptionI18n: ["en": "Arts"],
                          seasons: [Season(from: "12-31", to: "01-01")])
        let object = try #require(try JSONSerialization.jsonObject(with: try JSONCoding.encoder.encode(place)) as? [String: Any])
        #expect(Set(object.keys) == ["id", "name", "category", "lat", "lon", "address", "phone", "website", "price_level", "description",
                                     "opening_hours", "photos", "popularity", "external_ids", "created_at", "updated_at", "version", "timezone",
                                     "name_i18n", "description_i18n", "seasons"])
        #expect(PlaceSummary.memberNames.isSubset(of: Set(object.keys)))
        let summary = try JSONCoding.decoder.decode(PlaceSummary.self, from: try JSONCoding.encoder.encode(place))
        #expect(summary == PlaceSummary(place))
        // Optional members a place leaves out are left out, not written as null.
        let bare = Place(id: 2, name: "Bare", category: "park", lat: 0, lon: 0, createdAt: "t", updatedAt: "t")
        let bareText = String(decoding: try JSONCoding.encoder.encode(bare), as: UTF8.self)
        #expect(!bareText.contains("null") && !bareText.contains("timezone") && !bareText.contains("seasons") && bareText.contains(#""opening_hours":[]"#))
    }

    @Test func openingTimesAsPeriodsWriteThem() {
        #expect(OpeningPeriod.minutes("00:00") == 0)
        #expect(OpeningPeriod.minutes("09:30") == 570)
        #expect(OpeningPeriod.minutes("24:00") == 1_440)
        for bad in ["9:30", "24:01", "25:00", "12:60", "12-30", "", "12:3a", "123:0"] { #expect(OpeningPeriod.minutes(bad) == nil, "\(bad)") }
    }
}
