import Gateway
import NotifyService
import Testing

/// The gateway offers every notify request, routed to `notify`, to whom issue 12's table says.
@Suite struct NotifyRoutingTests {
    static let access: [String: Access] = [
        "annotations.form": .anyone, "annotations.form.set": .admin, "annotations.submit": .user,
        "annotations.get": .anyone, "annotations.delete": .user, "annotations.nearby": .anyone,
        "annotations.viewport": .anyone, "notify.settings.get": .user, "notify.settings.set": .user,
        "notify.location": .user, "notify.inbox": .user, "notify.ack": .user,
    ]

    @Test func everyNotifyRequestIsRoutedToNotifyWithItsAccess() {
        let types = NotifyService.definition().handlers.types
        #expect(Set(types) == Set(Self.access.keys))
        for type in types {
            let rule = AccessPolicy.standard.rule(for: type)
            #expect(rule?.service == "notify" && rule?.access == Self.access[type], "\(type): \(String(describing: rule))")
        }
    }
}
