import Bus
import Contracts
import Foundation
import Geo
import ServiceKit

extension PlaceID {
    /// The body of `catalog.get` and `catalog.delete`. When the server's header scan found the
    /// body (`RequestContext.scannedBody`) and it is plainly `{"id":N}` (that one member, N an
    /// integer literal that fits), it is read by span, without the decoder and without walking
    /// the envelope again; any other body, valid or not, is decoded from `envelope` as before,
    /// so its answers and error messages stay the decoder's. The server has checked the
    /// envelope as strict JSON.
    public static func read(scannedBody: Data?, envelope: Data) throws(ServiceError) -> PlaceID {
        if let scannedBody, let id = plainID(body: scannedBody) { return PlaceID(id: id) }
        return try RequestContext.checkedParams(PlaceID.self, scannedBody: scannedBody, envelope: envelope)
    }

    /// N of a body that is exactly `{"id":N}` up to white space, or nil.
    static func plainID(body: Data) -> Int64? {
        guard let members = JSONSpan.members(of: body), members.count == 1, members[0].key == "id" else { return nil }
        // Strict JSON has no `+` and no leading zeros, so what Int64 parses is a plain integer.
        return Int64(String(decoding: body[members[0].value], as: UTF8.self))
    }
}

/// The rules every stored place satisfies; each failure names its field. Texts are bounded
/// in UTF-8 bytes (4 per character) before their characters are counted (`TextRule`).
enum PlaceRules {
    static let maxPhotos = 50
    /// The most seasons a place has.
    static let maxSeasons = 20
    static let maxURL = PlaceTexts.url.maxCharacters

    static func validate(_ p: Place, categories: Set<String>) throws(ServiceError) {
        guard !p.name.isEmpty else { throw .invalid("name", "must not be empty") }
        try PlaceTexts.name.check(p.name)
        try category(p.category, among: categories)
        do {
            _ = try Coordinate(latitude: p.lat, longitude: p.lon)
        } catch {
            throw error.serviceError
        }
        try PlaceTexts.address.check(p.address)
        if let phone = p.phone {
            try PlaceTexts.phone.check(phone)
            let allowed = CharacterSet(charactersIn: "0123456789+-() ./")
            guard phone.unicodeScalars.allSatisfy(allowed.contains), phone.contains(where: \.isNumber) else {
                throw .invalid("phone", "may hold only digits, spaces and + - ( ) . /")
            }
        }
        if let website = p.website { try httpURL(website, "website") }
        if let level = p.priceLevel, !(0...4).contains(level) { throw .invalid("price_level", "must be 0 to 4") }
        try PlaceTexts.description.check(p.description)
        guard p.popularity.isFinite, p.popularity >= 0 else { throw .invalid("popularity", "must be a finite number, 0 or more") }
        guard p.photos.count <= maxPhotos else { throw .invalid("photos", "at most \(maxPhotos) photos") }
        for (i, photo) in p.photos.enumerated() {
            try httpURL(photo.url, "photos[\(i)].url")
            try TextRule("photos[\(i)].attribution", maxCharacters: PlaceTexts.photoAttribution.maxCharacters).check(photo.attribution)
        }
        guard p.openingHours.count <= 50 else { throw .invalid("opening_hours", "at most 50 periods") }
        for (i, period) in p.openingHours.enumerated() {
            guard (1...7).contains(period.day) else { throw .invalid("opening_hours[\(i)].day", "must be 1 (Monday) to 7 (Sunday)") }
            guard OpeningPeriod.minutes(period.open) != nil, OpeningPeriod.minutes(period.open) != 24 * 60 else {
                throw .invalid("opening_hours[\(i)].open", "must be HH:MM from 00:00 to 23:59")
            }
            guard OpeningPeriod.minutes(period.close) != nil else { throw .invalid("opening_hours[\(i)].close", "must be HH:MM from 00:00 to 24:00") }
        }
        if let zone = p.timezone, zone.utf8.count > 64 || TimeZone(identifier: zone) == nil {
            throw .invalid("timezone", "not an IANA time zone name (such as Australia/Sydney)")
        }
        try externalIds(p.externalIds)
        try LanguageTexts.check(p.nameI18n, field: "name_i18n", rule: PlaceTexts.name)
        try LanguageTexts.check(p.descriptionI18n, field: "description_i18n", rule: PlaceTexts.description)
        try PlaceTexts.openingHoursText.check(p.openingHoursText)
        try seasons(p.seasons)
    }

    /// At most `maxSeasons` seasons, each two days of one form (`MM-DD` or `YYYY-MM-DD`) that
    /// exist, a dated one not ending before it starts.
    static func seasons(_ seasons: [Season]?) throws(ServiceError) {
        guard let seasons else { return }
        guard seasons.count <= maxSeasons else { throw .invalid("seasons", "at most \(maxSeasons) seasons") }
        for (i, season) in seasons.enumerated() {
            let days = "must be a day of the year MM-DD (recurring) or a date YYYY-MM-DD, one that exists"
            guard let from = Season.Day(season.from) else { throw .invalid("seasons[\(i)].from", "\(days), got '\(clipped(season.from))'") }
            guard let to = Season.Day(season.to) else { throw .invalid("seasons[\(i)].to", "\(days), got '\(clipped(season.to))'") }
            guard (from.year == nil) == (to.year == nil) else {
                throw .invalid("seasons[\(i)].to", "must be of the same form as from: both MM-DD (recurring) or both YYYY-MM-DD (dated)")
            }
            if from.year != nil, to < from { throw .invalid("seasons[\(i)].to", "a dated season must not end before it starts") }
        }
    }

    /// A text as an error message quotes it: at most 20 characters of it.
    private static func clipped(_ text: String) -> String { text.count <= 20 ? text : String(text.prefix(20)) + "…" }

    /// A place's or tour's ids in other datasets: at most 20, sources of 1-50 characters, ids of 1-200.
    static func externalIds(_ ids: [String: String]) throws(ServiceError) {
        guard ids.count <= 20 else { throw .invalid("external_ids", "at most 20 external ids") }
        for (source, id) in ids {
            // Bytes first (4 per character), so counting characters costs little.
            guard source.utf8.count <= 200, id.utf8.count <= 800, (1...50).contains(source.count), (1...200).contains(id.count) else {
                throw .invalid("external_ids", "sources must be 1-50 characters and ids 1-200")
            }
        }
    }

    /// Refuses a category that is not one of `categories`, listing those that are.
    static func category(_ id: String, among categories: Set<String>) throws(ServiceError) {
        guard categories.contains(id) else {
            throw .invalid("category", "unknown category '\(id)'; known: \(categories.sorted().joined(separator: ", "))")
        }
    }

    /// Surrounding white space is not part of a name, an empty object of texts by language is
    /// none, and a negative zero is zero: SQLite
    /// stores -0.0 as 0.0, so the JSON kept with the row must say 0 as every reading of the
    /// row does (`+ 0.0` turns -0.0 into 0.0 and changes no other number).
    ///
    /// A place with seasons and no time zone of its own is given `defaultZone` (the catalog's
    /// `--default-timezone`): its days are read in that zone, and every reader of the place
    /// (search's `search.popular`) reads it from the place, so the setting has one reader.
    /// (The import passes the same zone; a check of one field alone passes none.)
    static func normalized(_ p: Place, defaultZone: String? = nil) -> Place {
        var place = p
        place.name = trimmed(p.name)
        place.lat = p.lat + 0.0
        place.lon = p.lon + 0.0
        place.popularity = p.popularity + 0.0
        // No texts by language is none: stored as NULL and left out of the JSON.
        if place.nameI18n?.isEmpty == true { place.nameI18n = nil }
        if place.descriptionI18n?.isEmpty == true { place.descriptionI18n = nil }
        // No seasons is none, as for texts by language.
        if place.seasons?.isEmpty == true { place.seasons = nil }
        if place.seasons != nil, place.timezone == nil, let defaultZone { place.timezone = defaultZone }
        return place
    }

    /// `text` without the white space, newlines and invisible characters around it
    /// (`TextRule.trimmingInvisible`). A text that starts and ends with a byte of ASCII that is
    /// not white space (most names) has none, and is answered without Foundation, which cost 4%
    /// of a create (callgrind-create).
    static func trimmed(_ text: String) -> String {
        func plain(_ byte: UInt8?) -> Bool { byte.map { $0 < 0x80 && $0 != 0x20 && !(0x09...0x0D).contains($0) } ?? false }
        if plain(text.utf8.first), plain(text.utf8.last) { return text }
        return TextRule.trimmingInvisible(text)
    }

    private static func httpURL(_ value: String, _ field: String) throws(ServiceError) {
        try TextRule(field, maxCharacters: maxURL).checkBytesAndCharacters(value)
        guard value.count <= maxURL, let components = URLComponents(string: value),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host, !host.isEmpty
        else {
            throw .invalid(field, "must be an http or https URL")
        }
    }
}
