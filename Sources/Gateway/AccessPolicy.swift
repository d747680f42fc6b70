import Bus

/// Who may call a gateway method.
public enum Access: String, Sendable {
    /// Anyone, signed in or not (a signed-in caller is still passed on to the service).
    case anyone
    /// A signed-in user (or admin).
    case user
    /// A signed-in admin.
    case admin
}

/// The methods the gateway offers, the service that answers each and who may call it: the
/// one place that says so. A method not listed is not offered: services' internal methods
/// (`auth.validate`, `admin.create`, `sys.*`) stay on the bus.
public struct AccessPolicy: Sendable {
    /// A method, or every method starting with `pattern` when it ends with a dot.
    public struct Rule: Sendable, Equatable {
        public var pattern: String
        public var service: String
        public var access: Access
        /// Whether a `token` param is the method's own (a share link's), passed on as it came,
        /// rather than a session token standing for this one request (the gateway's rule).
        public var ownsTokenParam: Bool

        /// Whether the rule covers every method starting with its pattern.
        public var isPrefix: Bool { pattern.hasSuffix(".") }

        public init(_ pattern: String, _ service: String, _ access: Access, ownsTokenParam: Bool = false) {
            self.pattern = pattern
            self.service = service
            self.access = access
            self.ownsTokenParam = ownsTokenParam
        }
    }

    public let rules: [Rule]
    private let exact: [String: Rule]
    /// Prefix rules, longest first.
    private let prefixes: [Rule]

    public init(rules: [Rule]) {
        self.rules = rules
        exact = Dictionary(rules.filter { !$0.isPrefix }.map { ($0.pattern, $0) }, uniquingKeysWith: { first, _ in first })
        prefixes = rules.filter(\.isPrefix).sorted { $0.pattern.count > $1.pattern.count }
    }

    /// The rule of a method: its own, else the longest prefix rule that covers it.
    public func rule(for method: String) -> Rule? {
        exact[method] ?? prefixes.first { method.count > $0.pattern.count && method.hasPrefix($0.pattern) }
    }

    /// Tourbus's services.
    public static let standard = AccessPolicy(rules: [
        // Places: anyone reads, admins write.
        Rule("catalog.get", "catalog", .anyone),
        Rule("catalog.list", "catalog", .anyone),
        Rule("catalog.categories", "catalog", .anyone),
        // The apps' interface strings: anyone, signed in or not (the login screen needs them).
        Rule("strings.get", "catalog", .anyone),
        Rule("catalog.create", "catalog", .admin),
        Rule("catalog.update", "catalog", .admin),
        Rule("catalog.delete", "catalog", .admin),
        // Tours: anyone reads, admins write; the catalog owns them.
        Rule("tours.get", "catalog", .anyone),
        Rule("tours.list", "catalog", .anyone),
        Rule("tours.create", "catalog", .admin),
        Rule("tours.update", "catalog", .admin),
        Rule("tours.delete", "catalog", .admin),
        // Tour maps: anyone reads a map and its tiles; admins upload and place them.
        Rule("tours.map.get", "catalog", .anyone),
        Rule("tours.map.tile", "catalog", .anyone),
        Rule("tours.map.upload.", "catalog", .admin),
        Rule("tours.map.set", "catalog", .admin),
        // Imports, for admins, in chunks under the request limit (`catalog.import.apply` stays on the bus).
        Rule("catalog.import.begin", "catalog", .admin),
        Rule("catalog.import.append", "catalog", .admin),
        Rule("catalog.import.commit", "catalog", .admin),
        Rule("catalog.import.status", "catalog", .admin),
        // Walking a tour: a signed-in user's own position and progress.
        Rule("tours.locate", "catalog", .user),
        Rule("tours.progress", "catalog", .user),
        Rule("tours.progress.reset", "catalog", .user),
        // The library: a signed-in user's downloads, sealed to their own devices; anyone
        // reads the public key that signs them.
        Rule("library.key", "catalog", .anyone),
        Rule("library.", "catalog", .user),
        // Search: anyone. A signed-in user's recent searches are kept by favorites (exact
        // rules, which beat the prefix).
        Rule("search.", "search", .anyone),
        Rule("search.recent", "favorites", .user),
        Rule("search.recent.clear", "favorites", .user),
        Rule("directions.", "search", .anyone),
        // Accounts, profiles, reviews, follows and sharing: the social service.
        Rule("auth.register", "social", .anyone),
        Rule("auth.login", "social", .anyone),
        Rule("auth.logout", "social", .user),
        Rule("auth.delete", "social", .user),
        Rule("profile.get", "social", .anyone),
        Rule("profile.update", "social", .user),
        // Profile photos: anyone sees one, as anyone sees the profile; a user sets and deletes their own.
        Rule("profile.photo", "social", .anyone),
        Rule("profile.photo.upload.", "social", .user),
        Rule("profile.photo.delete", "social", .user),
        Rule("reviews.list", "social", .anyone),
        Rule("reviews.add", "social", .user),
        Rule("reviews.delete", "social", .user),
        Rule("social.followers", "social", .anyone),
        Rule("social.following", "social", .anyone),
        Rule("social.follow", "social", .user),
        Rule("social.unfollow", "social", .user),
        Rule("social.feed", "social", .user),
        // Who is at a place: signed-in users only, so a listing is never anonymous.
        Rule("social.people_at", "social", .user),
        Rule("share.place", "social", .anyone),
        // Blocks and groups: a signed-in user's own. Named one by one: `groups.position.flush`
        // is the service's own.
        Rule("social.block", "social", .user),
        Rule("social.unblock", "social", .user),
        Rule("social.blocks", "social", .user),
        Rule("groups.create", "social", .user),
        Rule("groups.get", "social", .user),
        Rule("groups.list", "social", .user),
        Rule("groups.invite", "social", .user),
        Rule("groups.accept", "social", .user),
        Rule("groups.decline", "social", .user),
        Rule("groups.leave", "social", .user),
        Rule("groups.remove", "social", .user),
        Rule("groups.position", "social", .user),
        Rule("groups.sharing", "social", .user),
        Rule("groups.map", "social", .user),
        Rule("groups.follow", "social", .user),
        Rule("groups.unfollow", "social", .user),
        // Chat: a signed-in user's own conversations, named one by one.
        Rule("chat.send", "social", .user),
        Rule("chat.history", "social", .user),
        Rule("chat.conversations", "social", .user),
        Rule("chat.read", "social", .user),
        // A signed-in user's devices (their X25519 keys, to which downloads are sealed).
        Rule("devices.", "social", .user),
        Rule("admin.set_role", "social", .admin),
        // Annotations and alerts: the notify service. Anyone reads annotations and the form;
        // users submit, delete their own, and report positions; admins replace the form.
        Rule("annotations.form", "notify", .anyone),
        Rule("annotations.form.set", "notify", .admin),
        Rule("annotations.submit", "notify", .user),
        Rule("annotations.get", "notify", .anyone),
        Rule("annotations.delete", "notify", .user),
        Rule("annotations.nearby", "notify", .anyone),
        Rule("annotations.viewport", "notify", .anyone),
        Rule("annotations.sync", "notify", .anyone),
        Rule("annotations.import", "notify", .admin),
        Rule("notify.", "notify", .user),
        // Saved places, lists and map pins: the favorites service, each user's own. A share
        // token alone reads the one list it was made for.
        // Named one by one: `favorites.counts.flush` is the service's own.
        Rule("favorites.toggle", "favorites", .user),
        Rule("favorites.add", "favorites", .user),
        Rule("favorites.remove", "favorites", .user),
        Rule("favorites.visited.add", "favorites", .user),
        Rule("favorites.list", "favorites", .user),
        Rule("favorites.contains", "favorites", .user),
        Rule("favorites.lists", "favorites", .user),
        Rule("favorites.lists.create", "favorites", .user),
        Rule("favorites.lists.rename", "favorites", .user),
        Rule("favorites.lists.delete", "favorites", .user),
        Rule("favorites.share", "favorites", .user),
        Rule("favorites.share.revoke", "favorites", .user),
        Rule("favorites.shared", "favorites", .anyone, ownsTokenParam: true),
        Rule("pins.", "favorites", .user),
    ])
}
