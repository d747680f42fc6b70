import Bus
import Contracts
import Foundation
import ServiceKit
import Storage

/// The rules of profile fields, each naming its field. Texts are checked in bytes first.
enum ProfileRules {
    /// A home city, trimmed (invisible characters too): one that trims to nothing is refused;
    /// `null` clears it.
    static func homeCity(_ value: String) throws(ServiceError) -> String {
        let city = try ProfileUpdate.homeCityRule.trimmed(value)
        guard !city.isEmpty else { throw .invalid("home_city", "must not be empty; send null to clear it") }
        return city
    }

    static func avatarURL(_ value: String) throws(ServiceError) {
        try ProfileUpdate.avatarURLRule.checkBytesAndCharacters(value)
        guard value.count <= ProfileUpdate.avatarURLRule.maxCharacters, let url = URLComponents(string: value), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", url.host?.isEmpty == false
        else {
            throw .invalid("avatar_url", "must be an http or https URL of at most 500 characters")
        }
    }

    static func birthYear(_ value: Int, currentYear: Int) throws(ServiceError) {
        guard (1900...currentYear).contains(value) else { throw .invalid("birth_year", "must be 1900 to \(currentYear)") }
    }

    /// A BCP 47-style tag: a 2-3 letter language, then optional subtags (`en`, `pt-BR`, `zh-Hant-TW`).
    static func language(_ value: String) throws(ServiceError) {
        try ProfileUpdate.languageRule.checkBytesAndCharacters(value)
        guard value.count <= ProfileUpdate.languageRule.maxCharacters, value.wholeMatch(of: /[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*/) != nil else {
            throw .invalid("language", "must be a language tag such as en or pt-BR")
        }
    }

    /// The age group of someone born in `birthYear` (their age this year, birthday or not).
    static func ageGroup(birthYear: Int, currentYear: Int) -> String {
        switch currentYear - birthYear {
        case ..<18: "under 18"
        case 18...24: "18-24"
        case 25...34: "25-34"
        case 35...44: "35-44"
        case 45...54: "45-54"
        case 55...64: "55-64"
        default: "65+"
        }
    }
}

/// Profiles: what users say of themselves, and who sees what of it.
final class ProfileStore: SocialFeature {
    let shared: SocialShared
    let blocks: BlockStore
    let people: PeopleStore

    init(_ shared: SocialShared, blocks: BlockStore, people: PeopleStore) {
        self.shared = shared
        self.blocks = blocks
        self.people = people
    }

    /// The profile of `id` as `viewer` sees it (the owner sees more); `not_found` when the
    /// viewer blocks them, as for a user who does not exist. Its counts of follows are those
    /// the viewer's follow lists show.
    func profile(_ id: Int64, viewer: Int64?) throws -> Profile {
        try blocks.requireVisibleUser(id, viewer: viewer)
        guard
            let row = try db.queryOne(
                """
                SELECT username, name, role, bio, avatar_url, language, home_city, email, birth_year, discoverable, created_at,
                       (SELECT count(*) FROM follows f WHERE f.followee_id = users.id AND \(BlockRules.followShown())) AS followers,
                       (SELECT count(*) FROM follows f WHERE f.follower_id = users.id AND \(BlockRules.followShown())) AS following,
                       (SELECT updated_at FROM photos WHERE user_id = users.id) AS photo_updated_at
                FROM users WHERE id = ?
                """, viewer, viewer, id)
        else { throw AccountRules.noUser(id) }
        let own = viewer == id
        let birthYear: Int? = try row.decode("birth_year")
        let email: String = try row.decode("email")
        return try Profile(
            id: id, username: row.decode("username"), name: row.decode("name"), role: row.decode("role"),
            bio: row.decode("bio"), avatarUrl: row.decode("avatar_url"), language: row.decode("language"),
            homeCity: row.decode("home_city"), email: own ? email : nil, birthYear: own ? birthYear : nil,
            ageGroup: own ? nil : birthYear.map { ProfileRules.ageGroup(birthYear: $0, currentYear: currentYear) },
            discoverable: own ? try row.decode("discoverable", as: Int64.self) == 1 : nil,
            followers: row.decode("followers"), following: row.decode("following"), createdAt: row.decode("created_at"),
            photo: row.decode("photo_updated_at", as: String?.self).map(PhotoStamp.init(updatedAt:)))
    }

    /// Checks the fields the update sets (in the order of the table in social.md), before any
    /// reading or writing; a field left alone is not checked again.
    func updateProfile(_ update: ProfileUpdate, caller: Caller) throws -> Profile {
        if case .null = update.name { throw ServiceError.invalid("name", "cannot be null") }
        if case .null = update.discoverable { throw ServiceError.invalid("discoverable", "cannot be null; give true or false") }
        let name = try update.name.checked(AccountRules.name)
        let bio = try update.bio.checked(ProfileUpdate.bioRule.check)
        let avatarURL = try update.avatarUrl.checked(ProfileRules.avatarURL)
        let year = currentYear
        let birthYear = try update.birthYear.checked { value throws(ServiceError) in try ProfileRules.birthYear(value, currentYear: year) }
        let language = try update.language.checked(ProfileRules.language)
        let homeCity = try update.homeCity.checked(ProfileRules.homeCity)
        return try db.transaction {
            let current = try profile(caller.id, viewer: caller.id)
            try db.run(
                "UPDATE users SET name = ?, bio = ?, avatar_url = ?, birth_year = ?, language = ?, home_city = ? WHERE id = ?",
                name.applied(to: current.name), bio.applied(to: current.bio), avatarURL.applied(to: current.avatarUrl),
                birthYear.applied(to: current.birthYear), language.applied(to: current.language),
                homeCity.applied(to: current.homeCity), caller.id)
            if case .value(let on) = update.discoverable { try people.setDiscoverable(on, caller: caller) }
            return try profile(caller.id, viewer: caller.id)
        }
    }
}

extension Patch {
    /// The patch with its value checked by `rule`; absent and null pass as they are.
    func checked(_ rule: (Value) throws(ServiceError) -> Void) throws(ServiceError) -> Patch<Value> {
        if case .value(let value) = self { try rule(value) }
        return self
    }

    /// The patch with its value checked and normalised by `rule`; absent and null pass as they are.
    func checked(_ rule: (Value) throws(ServiceError) -> Value) throws(ServiceError) -> Patch<Value> {
        if case .value(let value) = self { return .value(try rule(value)) }
        return self
    }
}
