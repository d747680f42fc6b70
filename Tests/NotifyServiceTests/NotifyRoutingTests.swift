import Contracts
import Gateway
import NotifyService
import Testing

/// The gateway offers every notify request, routed to `notify`, to whom issue 12's table says,
/// and none of the service's internal ones.
@Suite struct NotifyRoutingTests {
    static let access: [String: Access] = [
        "annotations.form": .anyone, "annotations.form.set": .admin, "annotations.submit": .user,
        "annotations.get": .anyone, "annotations.delete": .user, "annotations.nearby": .anyone,
        "annotations.viewport": .anyone, "annotations.sync": .anyone, "annotations.import": .admin, "notify.settings.get": .user, "notify.settings.set": .user,
        "notify.location": .user, "notify.inbox": .user, "notify.ack": .user,
    ]
    /// Sent by the service to itself only.
    static let internalTypes: Set<String> = ["annotations.purge"]

    @Test func everyNotifyRequestIsRoutedToNotifyWithItsAccess() {
        let types = NotifyService.definition().handlers.types
        #expect(Set(types) == Set(Self.access.keys).union(Self.internalTypes))
        #expect(Set(types) == Set(Methods.owned(by: .notify).map(\.name)))
        for type in Self.internalTypes {
            #expect(AccessPolicy.standard.rule(for: type) == nil, "\(type)")
            #expect(Methods.byName[type]?.access == .internal, "\(type)")
        }
        for type in types where !Self.internalTypes.contains(type) {
            let rule = AccessPolicy.standard.rule(for: type)
            #expect(rule?.service == "notify" && rule?.access == Self.access[type], "\(type): \(String(describing: rule))")
        }
    }
}
