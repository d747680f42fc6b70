import Bus
import Foundation
import ServiceKit
import Synchronization
import TestSupport
import Testing

/// Three servers standing for the replicas of a replicated service: each admits requests only
/// while the shared `leader` names it, and refuses the rest as a replica that does not lead
/// does (`ServiceError.notLeader`), naming `named` when set (the leader they last heard from),
/// else `leader`; `test.write` counts what each one did. `client` follows their leader; `stop`
/// ends them all.
final class StandInReplicas: Sendable {
    let leader: Locked<Int>
    let named = Locked<Int?>(nil)
    let done = Locked([0, 0, 0])
    /// The replica whose writes take 2.5 s (0: none).
    let stalled = Locked(0)
    /// The replica that says nothing at all while set, as a hung process (0: none; at most 5 s).
    let hung = Locked(0)
    let servers: [RPCServer<Int>]
    let client: RPCClient

    /// Three replicas, `leader` leading (0: none yet).
    init(leader initial: Int = 0) throws {
        leader = Locked(initial)
        let context = try ZMQContext()
        var servers: [RPCServer<Int>] = []
        for replica in 1...3 {
            var table = HandlerTable<Int>()
            let done = self.done
            let stalled = self.stalled
            table.on("test.write", .write) { (_: Empty, _, number) -> Int in
                if stalled.value == number { usleep(2_500_000) }
                done.withLock { $0[number - 1] += 1 }
                return number
            }
            table.on("test.read", .read) { (_: Empty, _, number) -> Int in number }
            var options = RPCServerOptions()
            let leader = self.leader
            let named = self.named
            let hung = self.hung
            options.admit = { type in
                // On the server's I/O thread: while it waits, the server answers nothing.
                for _ in 0..<500 where hung.value == replica { usleep(10_000) }
                let current = leader.withLock { $0 }
                return current == replica ? nil : ServiceError.notLeader("replica \(replica) does not lead", leader: named.value ?? current)
            }
            servers.append(try RPCServer(context: context, bind: ["tcp://127.0.0.1:0"], table: table, options: options, logger: logger) { _ in replica })
        }
        self.servers = servers
        var options = RPCClientOptions()
        options.followsLeader = true
        client = try RPCClient(context: context, endpoints: servers.map { $0.endpoints[0] }, options: options, logger: logger)
    }

    func stop() {
        client.close()
        servers.forEach { $0.stop() }
    }

    func write(timeoutMilliseconds: Int = 2_000) throws(ServiceError) -> Int {
        try client.call("test.write", Empty(), as: Int.self, timeoutMilliseconds: timeoutMilliseconds)
    }
}

@Suite struct LeaderRoutingTests {
    @Test func aRefusalNamingTheLeaderSendsTheRequestThereAndOnlyTheLeaderDoesIt() throws {
        let replicas = try StandInReplicas(leader: 2)
        defer { replicas.stop() }
        let client = replicas.client
        #expect(client.replicaCount == 3)
        for _ in 0..<5 { #expect(try replicas.write() == 2) }
        #expect(replicas.done.withLock { $0 } == [0, 5, 0])
        // Replica 1 was asked once, then the client went to the leader it named.
        #expect(replicas.servers[0].stats.snapshot().errors == 1)
        #expect(replicas.servers[2].stats.snapshot().errors == 0)

        // A new leader: the old one's refusal names it.
        replicas.leader.withLock { $0 = 3 }
        #expect(try replicas.write() == 3)
        #expect(replicas.done.withLock { $0 } == [0, 5, 1])
    }

    @Test func whileNoLeaderIsKnownTheRequestWaitsForOneWithinItsDeadline() throws {
        let replicas = try StandInReplicas()
        defer { replicas.stop() }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(300)) { replicas.leader.withLock { $0 = 3 } }
        let started = Date()
        #expect(try replicas.write(timeoutMilliseconds: 3_000) == 3)
        #expect(Date().timeIntervalSince(started) >= 0.25)
        #expect(replicas.done.withLock { $0 } == [0, 0, 1])
    }

    @Test func withNoLeaderTheCallerGetsUnavailableByItsDeadlineAndNoHint() throws {
        let replicas = try StandInReplicas()
        defer { replicas.stop() }
        let started = Date()
        do {
            _ = try replicas.write(timeoutMilliseconds: 500)
            Issue.record("a write with no leader should fail")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.leader == nil)
        }
        let took = Date().timeIntervalSince(started)
        #expect(took >= 0.4 && took < 1.5)
        #expect(replicas.done.withLock { $0 } == [0, 0, 0])
    }

    @Test func aReplicaNamedByNumberIsAskedItselfAndItsRefusalComesBack() throws {
        let replicas = try StandInReplicas(leader: 1)
        defer { replicas.stop() }
        let client = replicas.client
        let answer = Locked<Result<Reply, ServiceError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        client.send(type: "test.write", body: Data("{}".utf8), timeoutMilliseconds: 2_000, replica: 3) { result in
            answer.withLock { $0 = result }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
        guard case .failure(let error)? = answer.value else {
            Issue.record("replica 3 does not lead, so it must refuse")
            return
        }
        #expect(error.code == .unavailable && error.leader == 1)
        #expect(replicas.done.withLock { $0 } == [0, 0, 0])
    }

    @Test func aLeaderThatAnswersTooLateIsNoLongerTakenForTheLeader() throws {
        let replicas = try StandInReplicas(leader: 1)
        defer { replicas.stop() }
        let client = replicas.client
        #expect(try replicas.write() == 1)
        // Replica 1 goes silent; the others no longer hear from it, so name no leader, until
        // they elect replica 2. The client passes it over and waits for the election.
        replicas.stalled.withLock { $0 = 1 }
        replicas.named.withLock { $0 = 0 }
        #expect(throws: ServiceError.self) { try replicas.write(timeoutMilliseconds: 800) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(300)) {
            replicas.leader.withLock { $0 = 2 }
            replicas.named.withLock { $0 = nil }
        }
        #expect(try replicas.write() == 2)
        replicas.stalled.withLock { $0 = 0 }
        // Replica 1 was asked twice: the write that took, the one that answered too late.
        #expect(eventually { replicas.done.value == [2, 1, 0] })
        #expect(replicas.servers[0].stats.snapshot().requests == 2)
    }

    /// A request that timed out at a leader which answers others meanwhile, or whose caller
    /// gave it too little time, leaves the leader the leader: only a replica silent for a while
    /// is passed over (else one request with `deadline_ms` 1 would send every write astray).
    @Test func aLeaderThatAnswersOthersMeanwhileOrAShortDeadlineIsStillTheLeader() throws {
        let replicas = try StandInReplicas(leader: 1)
        defer { replicas.stop() }
        #expect(try replicas.write() == 1)
        // Its writer stalls (2.5 s): writes time out there, and each goes to it all the same.
        replicas.stalled.withLock { $0 = 1 }
        let stalled = replicas.client.start(type: "test.write", body: Data("{}".utf8), timeoutMilliseconds: 5_000)
        func timesOut(_ milliseconds: Int) -> Bool {
            do {
                _ = try replicas.write(timeoutMilliseconds: milliseconds)
                return false
            } catch {
                return error.code == .deadlineExceeded
            }
        }
        #expect(timesOut(1))
        #expect(timesOut(150))
        // Its readers answer meanwhile: a write that waits longer than a replica may stay
        // silent still leaves it the leader.
        let reading = Locked(true)
        let reads = Locked(0)
        let reader = Thread {
            for _ in 0..<200 where reading.value {
                if (try? replicas.client.request(type: "test.read", body: Data("{}".utf8), timeoutMilliseconds: 500)) != nil { reads.withLock { $0 += 1 } }
                usleep(50_000)
            }
        }
        reader.start()
        #expect(timesOut(1_000))
        reading.withLock { $0 = false }
        #expect(reads.value > 5)
        replicas.stalled.withLock { $0 = 0 }
        _ = try? stalled.wait()
        #expect(try replicas.write(timeoutMilliseconds: 1_000) == 1)
        // No request went to the others: none was passed over to them.
        #expect(replicas.servers[1].stats.snapshot().requests == 0 && replicas.servers[2].stats.snapshot().requests == 0)
    }

    /// A hung leader (its connection up, nothing said) asked with deadlines shorter than the
    /// silence that passes it over: the silence adds up across them, so the client leaves it
    /// and finds the next leader once the others elect one.
    @Test func aHungLeaderAskedWithShortDeadlinesIsLeftOnceItsSilenceAddsUp() throws {
        let replicas = try StandInReplicas(leader: 1)
        defer { replicas.stop() }
        #expect(try replicas.write() == 1)
        replicas.hung.withLock { $0 = 1 }
        replicas.named.withLock { $0 = 0 }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(700)) {
            replicas.leader.withLock { $0 = 2 }
            replicas.named.withLock { $0 = nil }
        }
        var answered: Int?
        for _ in 0..<20 where answered == nil { answered = try? replicas.write(timeoutMilliseconds: 200) }
        replicas.hung.withLock { $0 = 0 }
        #expect(answered == 2)
    }

    /// The others still name a leader for a heartbeat or so after it went silent: a client that
    /// passed it over for its silence does not go back on their word, until it hears from it.
    @Test func aHintNamingASilentReplicaIsBelievedOnlyOnceItIsHeardFromAgain() throws {
        let replicas = try StandInReplicas(leader: 1)
        defer { replicas.stop() }
        #expect(try replicas.write() == 1)
        replicas.hung.withLock { $0 = 1 }
        var codes: [ErrorCode] = []
        for _ in 0..<5 {
            do {
                _ = try replicas.write(timeoutMilliseconds: 200)
            } catch {
                codes.append(error.code)
            }
        }
        // Some time out at replica 1 until its silence adds up to 0.5 s (three, on time); the
        // rest are not sent back there on the others' word, and find no leader in time.
        let first = codes.firstIndex(of: .unavailable) ?? codes.count
        #expect(codes.count == 5 && first >= 2 && first < 5 && codes[..<first].allSatisfy { $0 == .deadlineExceeded }, "\(codes)")
        #expect(codes[first...].allSatisfy { $0 == .unavailable }, "\(codes)")
        // It speaks again (its late replies come): the others' word is believed at once.
        replicas.hung.withLock { $0 = 0 }
        #expect(try replicas.write(timeoutMilliseconds: 1_000) == 1)
    }

    /// A leader whose connection is gone: the client passes it over for a connected replica.
    @Test func aLeaderThatStopsAnsweringIsLeftForTheNextReplica() throws {
        let replicas = try StandInReplicas(leader: 1)
        defer { replicas.stop() }
        #expect(try replicas.write() == 1)
        // The leader goes; replica 2 takes over (it names itself from now on).
        replicas.servers[0].stop()
        replicas.leader.withLock { $0 = 2 }
        var answered: [Int] = []
        for _ in 0..<5 {
            if let replica = try? replicas.write(timeoutMilliseconds: 1_000) { answered.append(replica) }
        }
        // At most the first write is lost with the old leader's connection; the rest reach the new one.
        #expect(answered.count >= 4 && answered.allSatisfy { $0 == 2 })
    }
}
