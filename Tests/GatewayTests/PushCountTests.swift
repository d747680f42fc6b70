@testable import Gateway
import Testing

/// What the metrics port reports of pushes: those posted to a connection and those dropped
/// because its backlog was full.
@Suite struct PushCountTests {
    @Test func theRegistryCountsPushesDeliveredAndDropped() throws {
        let registry = PushRegistry(gatewayId: "gw")
        let inbox = try LoopInbox()
        registry.set(user: 1, connection: 10, inbox: inbox, interests: Interests(topics: ["notify.alert"]))
        registry.set(user: 1, connection: 11, inbox: inbox, interests: Interests(topics: ["notify.alert"]))
        #expect(registry.deliveries == (0, 0))
        #expect(registry.deliver(PushSessionTests.push(1, user: 1)) == 2)
        #expect(registry.deliver(PushSessionTests.push(2, user: 2)) == 0)  // no one listens: neither
        #expect(registry.deliveries == (2, 0))
        // The loop takes nothing: past each backlog's bound, pushes are dropped and counted.
        for n in 0..<OutputBudget.maxQueuedPushes { registry.deliver(PushSessionTests.push(10 + n, user: 1)) }
        #expect(registry.deliveries == (2 * OutputBudget.maxQueuedPushes, 2))
    }
}
