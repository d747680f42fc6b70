import Bus
import Contracts
import ServiceKit
import Synchronization

/// The texts of route steps in a language (Protocols/routing.md, "Steps"): the `route.*` keys of
/// the catalog's interface strings (the repository's `i18n/`), asked of the catalog once a
/// minute per language; English as built in while the catalog has no strings or cannot be reached.
final class RouteTexts: Sendable {
    /// The English texts, the same as `i18n/en.json`'s `route.*` keys (a test holds them equal).
    static let english: [String: String] = [
        "route.depart": "Head {direction}", "route.depart_on": "Head {direction} on {street}", "route.continue": "Continue",
        "route.continue_onto": "Continue onto {street}", "route.turn.left": "Turn left", "route.turn_onto.left": "Turn left onto {street}",
        "route.turn.right": "Turn right", "route.turn_onto.right": "Turn right onto {street}", "route.turn.slight_left": "Turn slightly left",
        "route.turn_onto.slight_left": "Turn slightly left onto {street}", "route.turn.slight_right": "Turn slightly right",
        "route.turn_onto.slight_right": "Turn slightly right onto {street}", "route.turn.sharp_left": "Turn sharp left",
        "route.turn_onto.sharp_left": "Turn sharp left onto {street}", "route.turn.sharp_right": "Turn sharp right",
        "route.turn_onto.sharp_right": "Turn sharp right onto {street}", "route.turn.uturn": "Make a U-turn",
        "route.turn_onto.uturn": "Make a U-turn onto {street}", "route.arrive": "Arrive at your destination",
        "route.direction.north": "north", "route.direction.northeast": "northeast", "route.direction.east": "east",
        "route.direction.southeast": "southeast", "route.direction.south": "south", "route.direction.southwest": "southwest",
        "route.direction.west": "west", "route.direction.northwest": "northwest",
    ]
    /// How long a language's texts are kept, and how long after a failed ask English stands in
    /// (for every language: the catalog is not asked meanwhile).
    static let keptNanos: UInt64 = 60_000_000_000
    static let retryNanos: UInt64 = 5_000_000_000
    /// How long an ask of the catalog may take.
    static let askMilliseconds = 200
    /// Languages kept, at most: a client sending a new `lang` each time cannot grow the cache.
    static let maxLanguages = 64

    /// A language's texts: the tag they are in, and each key's template.
    struct Texts: Sendable {
        static let english = Texts(lang: LanguagePreference.fallback, templates: RouteTexts.english)

        var lang: String
        var templates: [String: String]

        /// The template of `key` with `{street}` and `{direction}` filled in.
        func text(_ key: String, street: String? = nil, direction: String? = nil) -> String {
            var text = templates[key] ?? RouteTexts.english[key] ?? key
            if let street { text = text.replacingOccurrences(of: "{street}", with: street) }
            if let direction {
                let name = templates["route.direction.\(direction)"] ?? RouteTexts.english["route.direction.\(direction)"] ?? direction
                text = text.replacingOccurrences(of: "{direction}", with: name)
            }
            return text
        }
    }

    private let cache = Mutex<[String: (at: UInt64, texts: Texts)]>([:])

    /// The chain of `lang` as a list `strings.get` takes: 16 tags and 256 bytes at most (the tags
    /// a chain adds past those are only fallbacks).
    static func asked(_ lang: LanguagePreference?) -> String {
        var tags: [String] = []
        for tag in (lang?.chain ?? [LanguagePreference.fallback]).prefix(LanguagePreference.maxEntries)
        where (tags + [tag]).joined(separator: ",").utf8.count <= LanguagePreference.maxBytes {
            tags.append(tag)
        }
        return tags.joined(separator: ",")
    }
    /// Until when the catalog is not asked at all, after an ask failed: a client sending a new
    /// `lang` each time cannot make every request wait for a catalog that does not answer.
    private let quietUntil = Atomic<UInt64>(0)

    /// The texts for `lang` (English's when none is asked), from the cache or the catalog.
    func texts(_ lang: LanguagePreference?, catalog: () throws -> RPCClient) -> Texts {
        let key = Self.asked(lang)
        let now = monotonicNanos()
        if let held = cache.withLock({ $0[key] }), now - held.at < Self.keptNanos { return held.texts }
        guard now >= quietUntil.load(ordering: .relaxed) else { return .english }
        var texts = Texts.english
        var at = now
        do {
            let reply = try catalog().call(
                Methods.Strings.get.name, StringsGet(lang: key), as: StringsReply.self, timeoutMilliseconds: Self.askMilliseconds)
            let templates = (reply.strings ?? [:]).filter { $0.key.hasPrefix("route.") }
            if !templates.isEmpty { texts = Texts(lang: reply.lang, templates: templates) }
        } catch let error as ServiceError where error.code == .invalidArgument {
            // This list refused (not the catalog silent): English for it alone, kept as long.
        } catch {
            // English stands in, and the catalog is asked again soon rather than at every step.
            at = now > Self.keptNanos - Self.retryNanos ? now - (Self.keptNanos - Self.retryNanos) : 0
            quietUntil.store(now + Self.retryNanos, ordering: .relaxed)
        }
        cache.withLock { cache in
            if cache.count >= Self.maxLanguages, cache[key] == nil, let oldest = cache.min(by: { $0.value.at < $1.value.at })?.key {
                cache[oldest] = nil
            }
            cache[key] = (at, texts)
        }
        return texts
    }
}
