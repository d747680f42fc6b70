import Bus
import Contracts
import Foundation
import ServiceCore
@testable import ServiceKit
import Storage
import Testing
import TestSupport

/// A service's periodic requests reach its own handlers, at start and then every interval, and stop with it.
@Suite(.serialized) struct PeriodicRequestTests {
    final class State: ServiceState {
        let worker: ServiceWorker
        init(worker: ServiceWorker) { self.worker = worker }
    }

    /// Runs the toy service with `toy.tick` every `interval` ms until `until` holds of the
    /// ticks (at most 3 s), stops it; the ticks' times.
    /// `busy`: the interval after a tick that answered it has more (the first `moreFor` ticks do).
    static func ticks(every interval: Int, busy: Int? = nil, moreFor: Int = 0, until done: ([UInt64]) -> Bool) throws -> (ticks: [UInt64], afterStop: Int) {
        let folder = TemporaryFolder("periodic")
        var config = ServiceConfig(service: "toy")
        config.dataDirectory = folder.path
        let ticks = Locked<[UInt64]>([])
        var table = HandlerTable<State>()
        let tick = Method<Empty, PeriodicWork>("toy.tick", .runtime, .internal, .write, "a toy's periodic request")
        table.on(tick) { (_: Empty, _, _) -> PeriodicWork in
            let count = ticks.withLock {
                $0.append(monotonicNanos())
                return $0.count
            }
            return PeriodicWork(more: count <= moreFor)
        }
        var definition = ServiceDefinition<State>(name: "toy", migrations: [], handlers: table, makeState: { State(worker: $0) })
        definition.periodic = [PeriodicRequest(tick, intervalMilliseconds: interval, busyIntervalMilliseconds: busy)]
        let runtime = try ServiceRuntime(definition: definition, config: config, context: try ZMQContext(),
                                         logger: Logger(component: "toy", level: .error) { _ in })
        for _ in 0..<60 where !done(ticks.withLock { $0 }) { usleep(50_000) }
        runtime.stop()
        let seen = ticks.withLock { $0 }
        usleep(300_000)
        return (seen, ticks.withLock { $0.count } - seen.count)
    }

    @Test func aPeriodicRequestRunsAtStart() throws {
        // An interval far longer than the test: the one tick is the one at start.
        let run = try PeriodicRequestTests.ticks(every: 60_000) { !$0.isEmpty }
        #expect(run.ticks.count == 1 && run.afterStop == 0)
    }

    @Test func aPeriodicRequestRunsEveryIntervalAndStopsWithTheService() throws {
        let run = try PeriodicRequestTests.ticks(every: 100) { $0.count >= 4 }
        #expect(run.ticks.count >= 4, "\(run.ticks.count) ticks")
        // Never sooner than the interval (a busy machine may make them later).
        #expect(zip(run.ticks, run.ticks.dropFirst()).allSatisfy { $1 - $0 >= 95_000_000 })
        #expect(run.afterStop == 0)
    }

    @Test func aRequestWithWorkLeftComesAgainAfterItsBusyInterval() throws {
        // 60 s between idle ticks; 20 ms after each of the first 5, which say there is more.
        let run = try PeriodicRequestTests.ticks(every: 60_000, busy: 20, moreFor: 5) { $0.count >= 6 }
        #expect(run.ticks.count == 6, "\(run.ticks.count) ticks")
        #expect(zip(run.ticks, run.ticks.dropFirst()).allSatisfy { $1 - $0 >= 19_000_000 })
        #expect(run.afterStop == 0)
    }

    @Test func aReplicaThatDoesNotLeadLooksAgainEvery100MillisecondsWithoutSpinning() throws {
        // Its requests would be refused; it asks whether it leads about ten times a second
        // (a thread that spun asked millions of times, and took a core from every follower).
        let asked = Locked<Int>(0)
        let tick = Method<Empty, PeriodicWork>("toy.tick", .runtime, .internal, .write, "a toy's periodic request")
        let context = try ZMQContext()
        let periodic = try PeriodicRequests(
            context: context, endpoints: ["tcp://127.0.0.1:9"], curve: nil, requests: [PeriodicRequest(tick, intervalMilliseconds: 100)],
            leading: {
                asked.withLock { $0 += 1 }
                return false
            }, logger: Logger(component: "toy", level: .error) { _ in })
        usleep(500_000)
        periodic.stop()
        let count = asked.withLock { $0 }
        #expect((1...10).contains(count), "asked \(count) times in 0.5 s")
    }
}
