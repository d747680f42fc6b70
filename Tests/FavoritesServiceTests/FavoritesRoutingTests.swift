import Contracts
import FavoritesService
import Gateway
import Testing

/// The gateway offers every favorites request, routed to `favorites`, to whom issue 13's (and
/// 16's) table says, and none of the service's internal ones.
@Suite struct FavoritesRoutingTests {
    static let access: [String: Access] = [
        "favorites.toggle": .user, "favorites.add": .user, "favorites.remove": .user, "favorites.visited.add": .user,
        "favorites.list": .user, "favorites.contains": .user, "favorites.lists": .user, "favorites.lists.create": .user,
        "favorites.lists.rename": .user, "favorites.lists.delete": .user, "favorites.share": .user, "favorites.share.revoke": .user,
        "favorites.shared": .anyone, "pins.add": .user, "pins.list": .user, "pins.update": .user, "pins.delete": .user,
        // Issue 16: recent searches, though `search.` sends every other search method to search.
        "search.recent": .user, "search.recent.clear": .user,
    ]
    /// Sent by the service to itself only.
    static let internalTypes: Set<String> = ["favorites.counts.flush"]

    @Test func everyFavoritesRequestIsRoutedToFavoritesWithItsAccess() {
        let types = FavoritesService.definition().handlers.types
        #expect(Set(types) == Set(Self.access.keys).union(Self.internalTypes))
        #expect(Set(types) == Set(Methods.owned(by: .favorites).map(\.name)))
        for type in Self.internalTypes {
            #expect(AccessPolicy.standard.rule(for: type) == nil, "\(type)")
            #expect(Methods.byName[type]?.access == .internal, "\(type)")
        }
        for type in types where !Self.internalTypes.contains(type) {
            let rule = AccessPolicy.standard.rule(for: type)
            #expect(rule?.service == "favorites" && rule?.access == Self.access[type], "\(type): \(String(describing: rule))")
        }
    }
}
