import Bus
import Foundation

// The catalog's place JSON read and written by hand: Foundation's JSONDecoder and JSONEncoder
// cost about 40% of a `catalog.create` in the catalog (bench/callgrind-create). Each reader
// reads only plainly shaped JSON and answers nil for anything else, which the caller then
// decodes with `JSONDecoder` (its answers and errors are the contract); each writer writes
// what `JSONCoding.encoder` writes, byte for byte. PlaceJSONTests hold both to Foundation's.

extension PlaceInput {
    /// Reads a `catalog.create` body (strict JSON, as the server checked it) by spans, when it
    /// is plainly shaped: an object with `PlaceInput`'s required members, each member of it
    /// given once and of its type (or `null` for an optional one), numbers that a `Double`
    /// holds, integers as plain literals, the same in nested objects, and no other member. Nil
    /// for anything else, valid or not (a repeated member, of which the decoder takes the first;
    /// a wrong type; a missing required member; an unknown one): the checked decoder reads those.
    public init?(spans json: Data) {
        guard let members = JSONSpan.members(of: json) else { return nil }
        var name: String?
        var category: String?
        var lat: Double?
        var lon: Double?
        var input = PlaceInput(name: "", category: "", lat: 0, lon: 0)
        var seen: UInt32 = 0
        func isNull(_ range: Range<Int>) -> Bool { json[range.lowerBound] == UInt8(ascii: "n") }
        func text(_ range: Range<Int>) -> String?? { isNull(range) ? .some(nil) : JSONSpan.string(at: range, in: json).map { .some($0) } }
        for (key, range) in members {
            // Each member read once (the decoder would take the first of two); an unknown one is
            // the checked decoder's to refuse.
            guard let bit = Self.memberBits[key] else { return nil }
            guard seen & bit == 0 else { return nil }
            seen |= bit
            switch key {
            case "name":
                guard let value = JSONSpan.string(at: range, in: json) else { return nil }
                name = value
            case "category":
                guard let value = JSONSpan.string(at: range, in: json) else { return nil }
                category = value
            case "lat":
                guard let value = JSONNumber.finite(json[range]) else { return nil }
                lat = value
            case "lon":
                guard let value = JSONNumber.finite(json[range]) else { return nil }
                lon = value
            case "address":
                guard let value = text(range) else { return nil }
                input.address = value
            case "phone":
                guard let value = text(range) else { return nil }
                input.phone = value
            case "website":
                guard let value = text(range) else { return nil }
                input.website = value
            case "description":
                guard let value = text(range) else { return nil }
                input.description = value
            case "timezone":
                guard let value = text(range) else { return nil }
                input.timezone = value
            case "opening_hours_text":
                guard let value = text(range) else { return nil }
                input.openingHoursText = value
            case "price_level":
                if isNull(range) { continue }
                guard let value = JSONNumber.integer(json[range]).flatMap({ Int(exactly: $0) }) else { return nil }
                input.priceLevel = value
            case "popularity":
                if isNull(range) { continue }
                guard let value = JSONNumber.finite(json[range]) else { return nil }
                input.popularity = value
            case "opening_hours":
                if isNull(range) { continue }
                guard let value = Self.array(at: range, in: json, { OpeningPeriod(spans: $0) }) else { return nil }
                input.openingHours = value
            case "photos":
                if isNull(range) { continue }
                guard let value = Self.array(at: range, in: json, Photo.init(spans:)) else { return nil }
                input.photos = value
            case "seasons":
                if isNull(range) { continue }
                guard let value = Self.array(at: range, in: json, { Season(spans: $0) }) else { return nil }
                input.seasons = value
            case "external_ids", "name_i18n", "description_i18n":
                if isNull(range) { continue }
                guard let texts = PlaceJSON.strings(at: range, in: json) else { return nil }
                switch key {
                case "external_ids": input.externalIds = texts
                case "name_i18n": input.nameI18n = texts
                default: input.descriptionI18n = texts
                }
            default: return nil
            }
        }
        guard let name, let category, let lat, let lon else { return nil }
        (input.name, input.category, input.lat, input.lon) = (name, category, lat, lon)
        self = input
    }

    /// One bit per member `PlaceInput` decodes.
    private static let memberBits: [String: UInt32] = Dictionary(
        uniqueKeysWithValues: [
            "name", "category", "lat", "lon", "address", "phone", "website", "description", "timezone", "price_level", "popularity",
            "opening_hours", "photos", "external_ids", "name_i18n", "description_i18n", "opening_hours_text", "seasons",
        ].enumerated().map { ($1, UInt32(1) << UInt32($0)) })

    /// The elements of the array at `range`, each read by `element`; nil if it is no array or
    /// an element does not read.
    public static func array<Element>(at range: Range<Int>, in json: Data, _ element: (Data) -> Element?) -> [Element]? {
        guard let ranges = JSONSpan.elements(at: range, in: json) else { return nil }
        var out: [Element] = []
        out.reserveCapacity(ranges.count)
        for range in ranges {
            guard let value = element(json.subdata(in: range)) else { return nil }
            out.append(value)
        }
        return out
    }
}

extension OpeningPeriod {
    /// Reads `{"day":…,"open":…,"close":…}` by spans: each of those once, `day` a plain integer
    /// literal, and no other member unless `skippingUnknown` (an event's reader, which skips
    /// them as the decoder does). Nil for anything else (the decoder reads it).
    public init?(spans json: Data, skippingUnknown: Bool = false) {
        guard let members = JSONSpan.members(of: json) else { return nil }
        var day: Int?
        var open: String?
        var close: String?
        for (key, range) in members {
            switch key {
            case "day":
                guard day == nil, let value = JSONNumber.integer(json[range]).flatMap({ Int(exactly: $0) }) else { return nil }
                day = value
            case "open":
                guard open == nil, let value = JSONSpan.string(at: range, in: json) else { return nil }
                open = value
            case "close":
                guard close == nil, let value = JSONSpan.string(at: range, in: json) else { return nil }
                close = value
            default: guard skippingUnknown else { return nil }
            }
        }
        guard let day, let open, let close else { return nil }
        self.init(day: day, open: open, close: close)
    }
}

extension Season {
    /// Reads `{"from":…,"to":…}` by spans, each once, and no other member unless
    /// `skippingUnknown` (as `OpeningPeriod`'s). Nil for anything else (the decoder reads it).
    public init?(spans json: Data, skippingUnknown: Bool = false) {
        guard let members = JSONSpan.members(of: json) else { return nil }
        var from: String?
        var to: String?
        for (key, range) in members {
            switch key {
            case "from":
                guard from == nil, let value = JSONSpan.string(at: range, in: json) else { return nil }
                from = value
            case "to":
                guard to == nil, let value = JSONSpan.string(at: range, in: json) else { return nil }
                to = value
            default: guard skippingUnknown else { return nil }
            }
        }
        guard let from, let to else { return nil }
        self.init(from: from, to: to)
    }
}

extension Photo {
    /// Reads `{"url":…}` or `{"url":…,"attribution":…}` (a string or `null`) by spans, each
    /// once, and no other member. Nil for anything else (the decoder reads it).
    init?(spans json: Data) {
        guard let members = JSONSpan.members(of: json) else { return nil }
        var url: String?
        var attribution: String??
        for (key, range) in members {
            switch key {
            case "url":
                guard url == nil, let value = JSONSpan.string(at: range, in: json) else { return nil }
                url = value
            case "attribution":
                guard attribution == nil else { return nil }
                if json[range.lowerBound] == UInt8(ascii: "n") {
                    attribution = .some(nil)
                } else {
                    guard let value = JSONSpan.string(at: range, in: json) else { return nil }
                    attribution = .some(value)
                }
            default: return nil
            }
        }
        guard let url else { return nil }
        self.init(url: url, attribution: attribution ?? nil)
    }
}

/// A place's JSON and its JSON columns, written by hand as `JSONCoding.encoder` writes them
/// (keys sorted by their UTF-8 bytes, absent optionals left out), byte for byte.
public enum PlaceJSON {
    /// The place as `JSONCoding.encoder.encode(place)` writes it. A place with a non-finite
    /// number goes to the encoder, which refuses it with its own error.
    public static func encode(_ place: Place) throws -> Data {
        guard place.lat.isFinite, place.lon.isFinite, place.popularity.isFinite else { return try JSONCoding.encoder.encode(place) }
        var out: [UInt8] = []
        out.reserveCapacity(512)
        out.append(UInt8(ascii: "{"))
        if let address = place.address {
            JSONText.appendKey("address", to: &out)
            JSONText.append(address, to: &out)
            out.append(comma)
        }
        JSONText.appendKey("category", to: &out)
        JSONText.append(place.category, to: &out)
        out.append(comma)
        JSONText.appendKey("created_at", to: &out)
        JSONText.append(place.createdAt, to: &out)
        out.append(comma)
        if let description = place.description {
            JSONText.appendKey("description", to: &out)
            JSONText.append(description, to: &out)
            out.append(comma)
        }
        if let texts = place.descriptionI18n {
            JSONText.appendKey("description_i18n", to: &out)
            append(texts, to: &out)
            out.append(comma)
        }
        JSONText.appendKey("external_ids", to: &out)
        append(place.externalIds, to: &out)
        out.append(comma)
        if let photos = place.hostedPhotos {
            JSONText.appendKey("hosted_photos", to: &out)
            append(photos, to: &out)
            out.append(comma)
        }
        JSONText.appendKey("id", to: &out)
        JSONText.append(place.id, to: &out)
        out.append(comma)
        JSONText.appendKey("lat", to: &out)
        JSONText.append(place.lat, to: &out)
        out.append(comma)
        JSONText.appendKey("lon", to: &out)
        JSONText.append(place.lon, to: &out)
        out.append(comma)
        JSONText.appendKey("name", to: &out)
        JSONText.append(place.name, to: &out)
        out.append(comma)
        if let texts = place.nameI18n {
            JSONText.appendKey("name_i18n", to: &out)
            append(texts, to: &out)
            out.append(comma)
        }
        JSONText.appendKey("opening_hours", to: &out)
        append(place.openingHours, to: &out)
        out.append(comma)
        if let text = place.openingHoursText {
            JSONText.appendKey("opening_hours_text", to: &out)
            JSONText.append(text, to: &out)
            out.append(comma)
        }
        if let phone = place.phone {
            JSONText.appendKey("phone", to: &out)
            JSONText.append(phone, to: &out)
            out.append(comma)
        }
        JSONText.appendKey("photos", to: &out)
        append(place.photos, to: &out)
        out.append(comma)
        JSONText.appendKey("popularity", to: &out)
        JSONText.append(place.popularity, to: &out)
        out.append(comma)
        if let level = place.priceLevel {
            JSONText.appendKey("price_level", to: &out)
            JSONText.append(Int64(level), to: &out)
            out.append(comma)
        }
        if let seasons = place.seasons {
            JSONText.appendKey("seasons", to: &out)
            append(seasons, to: &out)
            out.append(comma)
        }
        if let timezone = place.timezone {
            JSONText.appendKey("timezone", to: &out)
            JSONText.append(timezone, to: &out)
            out.append(comma)
        }
        JSONText.appendKey("updated_at", to: &out)
        JSONText.append(place.updatedAt, to: &out)
        out.append(comma)
        JSONText.appendKey("version", to: &out)
        JSONText.append(place.version, to: &out)
        if let website = place.website {
            out.append(comma)
            JSONText.appendKey("website", to: &out)
            JSONText.append(website, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return Data(out)
    }

    /// Opening hours as `JSONCoding.encoder` writes them (the `opening_hours` column).
    public static func text(_ periods: [OpeningPeriod]) -> String {
        var out: [UInt8] = []
        append(periods, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Photos as `JSONCoding.encoder` writes them (the `photos` column).
    public static func text(_ photos: [Photo]) -> String {
        var out: [UInt8] = []
        append(photos, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The object of strings at `range` of `json` (external ids, texts by language), each
    /// member once; nil when it is not one.
    public static func strings(at range: Range<Int>, in json: Data) -> [String: String]? {
        let data = json.subdata(in: range)
        guard let members = JSONSpan.members(of: data) else { return nil }
        var texts: [String: String] = [:]
        for (key, valueRange) in members {
            guard texts[key] == nil, let value = JSONSpan.string(at: valueRange, in: data) else { return nil }
            texts[key] = value
        }
        return texts
    }

    /// Hosted photos as `JSONCoding.encoder` writes them (the `hosted_photos` column).
    public static func text(_ photos: [HostedPhoto]) -> String {
        var out: [UInt8] = []
        append(photos, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Seasons as `JSONCoding.encoder` writes them (the `seasons` column).
    public static func text(_ seasons: [Season]) -> String {
        var out: [UInt8] = []
        append(seasons, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// External ids (or texts by language) as `JSONCoding.encoder` writes them (the `external_ids`, `name_i18n` and `description_i18n` columns).
    public static func text(_ externalIds: [String: String]) -> String {
        var out: [UInt8] = []
        append(externalIds, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static let comma = UInt8(ascii: ",")

    private static func append(_ periods: [OpeningPeriod], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (i, period) in periods.enumerated() {
            if i > 0 { out.append(comma) }
            out.append(UInt8(ascii: "{"))
            JSONText.appendKey("close", to: &out)
            JSONText.append(period.close, to: &out)
            out.append(comma)
            JSONText.appendKey("day", to: &out)
            JSONText.append(Int64(period.day), to: &out)
            out.append(comma)
            JSONText.appendKey("open", to: &out)
            JSONText.append(period.open, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
    }

    private static func append(_ seasons: [Season], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (i, season) in seasons.enumerated() {
            if i > 0 { out.append(comma) }
            out.append(UInt8(ascii: "{"))
            JSONText.appendKey("from", to: &out)
            JSONText.append(season.from, to: &out)
            out.append(comma)
            JSONText.appendKey("to", to: &out)
            JSONText.append(season.to, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
    }

    private static func append(_ photos: [Photo], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (i, photo) in photos.enumerated() {
            if i > 0 { out.append(comma) }
            out.append(UInt8(ascii: "{"))
            if let attribution = photo.attribution {
                JSONText.appendKey("attribution", to: &out)
                JSONText.append(attribution, to: &out)
                out.append(comma)
            }
            JSONText.appendKey("url", to: &out)
            JSONText.append(photo.url, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
    }

    private static func append(_ photos: [HostedPhoto], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (i, photo) in photos.enumerated() {
            if i > 0 { out.append(comma) }
            out.append(UInt8(ascii: "{"))
            if let attribution = photo.attribution {
                JSONText.appendKey("attribution", to: &out)
                JSONText.append(attribution, to: &out)
                out.append(comma)
            }
            if let caption = photo.caption {
                JSONText.appendKey("caption", to: &out)
                JSONText.append(caption, to: &out)
                out.append(comma)
            }
            JSONText.appendKey("height", to: &out)
            JSONText.append(Int64(photo.height), to: &out)
            out.append(comma)
            JSONText.appendKey("id", to: &out)
            JSONText.append(photo.id, to: &out)
            out.append(comma)
            JSONText.appendKey("width", to: &out)
            JSONText.append(Int64(photo.width), to: &out)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
    }

    /// Keys sorted by their UTF-8 bytes, as the encoder sorts them.
    private static func append(_ ids: [String: String], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (i, (key, value)) in ids.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }).enumerated() {
            if i > 0 { out.append(comma) }
            JSONText.append(key, to: &out)
            out.append(UInt8(ascii: ":"))
            JSONText.append(value, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}
