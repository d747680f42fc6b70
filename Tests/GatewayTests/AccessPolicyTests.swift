import Contracts
import Foundation
import CatalogService
@testable import Gateway
import SearchService
import SocialService
import Testing

@Suite struct AccessPolicyTests {
    /// Methods services answer that clients never reach through the gateway.
    static let internalMethods: Set<String> = ["auth.validate", "admin.create", "catalog.import.apply", "social.ratings.sweep", "groups.position.flush",
                                                  "catalog.streets.list", "catalog.streets.chunk"]

    /// Each service answers exactly the methods Contracts declares it owns (a handler can only be
    /// bound to a declaration), and the gateway offers all but the internal ones, to that service.
    @Test func everyServiceMethodIsOfferedByItsServiceOrKeptInternal() {
        let services = [(MethodOwner.catalog, CatalogService.definition().handlers.types), (.search, SearchService.definition().handlers.types),
                        (.social, SocialService.definition().handlers.types)]
        for (service, types) in services {
            #expect(!types.isEmpty)
            #expect(Set(types) == Set(Methods.owned(by: service).map(\.name)), "\(service)")
            for type in types where !AccessPolicyTests.internalMethods.contains(type) {
                #expect(AccessPolicy.standard.rule(for: type)?.service == service.rawValue, "\(type) has no rule for \(service)")
            }
        }
        for method in AccessPolicyTests.internalMethods {
            #expect(AccessPolicy.standard.rule(for: method) == nil)
            #expect(Methods.byName[method]?.access == .internal, "\(method)")
        }
        #expect(AccessPolicy.standard.rule(for: "search.popular")?.service == "search" && AccessPolicy.standard.rule(for: "search.popular")?.access == .anyone)
    }

    /// A method is routed only when declared: nothing by a prefix, nothing of the runtime's,
    /// and not the gateway's own built-ins (which it answers itself).
    @Test func onlyDeclaredMethodsAreRouted() {
        #expect(AccessPolicy.standard.rule(for: "sys.stats") == nil && AccessPolicy.standard.rule(for: "search.") == nil)
        #expect(AccessPolicy.standard.rule(for: "ping") == nil && AccessPolicy.standard.rule(for: "auth.resume") == nil)
        #expect(AccessPolicy.standard.rule(for: "catalog.create")?.access == .admin)
        #expect(AccessPolicy.standard.rule(for: "reviews.add")?.access == .user)
        #expect(AccessPolicy.standard.rule(for: "search.nearby")?.access == .anyone)
        #expect(AccessPolicy.standard.rule(for: "strings.get").map { $0.service == "catalog" && $0.access == .anyone } == true)
        // Recent searches are favorites' (FavoritesRoutingTests lists its methods), for users.
        for recent in ["search.recent", "search.recent.clear"] {
            #expect(AccessPolicy.standard.rule(for: recent).map { $0.service == "favorites" && $0.access == .user } == true, "\(recent)")
        }
        #expect(AccessPolicy.standard.rule(for: "search.recently") == nil)
        for walking in ["tours.locate", "tours.progress", "tours.progress.reset"] {
            #expect(AccessPolicy.standard.rule(for: walking).map { $0.service == "catalog" && $0.access == .user } == true, "\(walking)")
        }
        for method in ["library.add", "library.package", "library.list", "library.remove", "library.hide"] {
            #expect(AccessPolicy.standard.rule(for: method).map { $0.service == "catalog" && $0.access == .user } == true, "\(method)")
        }
        #expect(AccessPolicy.standard.rule(for: "library.key").map { $0.service == "catalog" && $0.access == .anyone } == true)
        #expect(AccessPolicy.standard.rule(for: "social.people_at").map { $0.service == "social" && $0.access == .user } == true)
        for method in ["devices.register", "devices.list", "devices.revoke"] {
            #expect(AccessPolicy.standard.rule(for: method).map { $0.service == "social" && $0.access == .user } == true, "\(method)")
        }
        for method in ["profile.photo.upload.begin", "profile.photo.upload.append", "profile.photo.upload.commit", "profile.photo.delete"] {
            #expect(AccessPolicy.standard.rule(for: method).map { $0.service == "social" && $0.access == .user } == true, "\(method)")
        }
        #expect(AccessPolicy.standard.rule(for: "profile.photo").map { $0.service == "social" && $0.access == .anyone } == true)
        for method in ["social.block", "social.unblock", "social.blocks", "groups.create", "groups.get", "groups.list", "groups.invite",
                       "groups.accept", "groups.decline", "groups.leave", "groups.remove", "groups.position", "groups.sharing", "groups.map",
                       "groups.follow", "groups.unfollow", "chat.send", "chat.history", "chat.conversations", "chat.read"] {
            #expect(AccessPolicy.standard.rule(for: method).map { $0.service == "social" && $0.access == .user } == true, "\(method)")
        }
    }
}

@Suite struct TokenHandlingTests {
    @Test func aTokenParamIsCutOutLeavingEveryOtherByte() {
        let params = Data(#"{"b":1.50,"token":"tb1_x","a\"q":"Caf\u00e9","c":[1,{"token":2}]}"#.utf8)
        #expect(String(decoding: Dispatcher.removingToken(from: params), as: UTF8.self) == #"{"b":1.50,"a\"q":"Caf\u00e9","c":[1,{"token":2}]}"#)
        #expect(String(decoding: Dispatcher.removingToken(from: Data(#"{"token":"t"}"#.utf8)), as: UTF8.self) == "{}")
    }

    @Test func onlyTheShapeOfAnIssuedTokenIsCheckedWithTheSocialService() {
        #expect(SessionToken.isWellFormed("tb1_" + String(repeating: "a", count: 42) + "-"))
        #expect(SessionToken.isWellFormed("tb1_" + String(repeating: "Z9_", count: 14) + "q"))
        for bad in ["", "tb1_", "tb1_forged", "tb2_" + String(repeating: "a", count: 43), "tb1_" + String(repeating: "a", count: 44),
                    "tb1_" + String(repeating: "a", count: 42) + "="] {
            #expect(!SessionToken.isWellFormed(bad), "\(bad)")
        }
    }
}
