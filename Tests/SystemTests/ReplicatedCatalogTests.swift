import Bus
import Contracts
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Three real `tourbus-catalog` replicas on loopback (issue 34): writes only through the
/// leader, on every replica once acknowledged, nothing lost when the leader is killed, and a
/// killed replica back from its own Raft log.
@Suite(.serialized) struct ReplicatedCatalogTests {
    let scratch = TemporaryFolder("replicated")
    let context: ZMQContext
    let logger = Logger(component: "test", level: .error)
    let raft: [String]
    /// Each replica's request endpoint, fixed so a restarted replica is where it was.
    let rpc: [String]

    init() throws {
        context = try ZMQContext()
        raft = try (1...3).map { _ in "127.0.0.1:\(try HTTPProbe.freePort())" }
        rpc = try (1...3).map { _ in "tcp://127.0.0.1:\(try HTTPProbe.freePort())" }
    }

    /// Replica `n` (1 to 3) on its own folder. A replica is ready once a leader has the schema,
    /// so several start together.
    func start(_ replicas: [Int]) throws -> [Int: ChildProcess] {
        let started = Locked<[Int: Result<UncheckedChild, ServiceError>]>([:])
        DispatchQueue.concurrentPerform(iterations: replicas.count) { index in
            let n = replicas[index]
            do {
                let child = try ChildProcess(
                    "tourbus-catalog", folder: "\(scratch.path)/replica-\(n)",
                    arguments: ["--bind", rpc[n - 1], "--raft", raft.joined(separator: ","), "--replica", String(n)])
                started.withLock { $0[n] = .success(UncheckedChild(child)) }
            } catch {
                started.withLock { $0[n] = .failure(ServiceError(.unavailable, "replica \(n): \(error)")) }
            }
        }
        return try started.value.mapValues { try $0.get().child }
    }

    func stats(_ replica: ChildProcess) -> ServiceStats.Replication? {
        guard let client = try? RPCClient(context: context, endpoints: [replica.rpc], logger: logger) else { return nil }
        defer { client.close() }
        return (try? client.call("sys.stats", Empty(), as: ServiceStats.self, timeoutMilliseconds: 1_000))?.replication
    }

    /// The replica that leads and takes writes, within 20 s.
    func leader(of replicas: [Int: ChildProcess]) -> Int? {
        var found: Int?
        _ = eventually(seconds: 20) {
            found = replicas.first { stats($0.value)?.ready == true }?.key
            return found != nil
        }
        return found
    }

    func client(_ replica: ChildProcess) throws -> RPCClient {
        try RPCClient(context: context, endpoints: [replica.rpc], logger: logger)
    }

    /// A client of the three as services and the gateway have one: it follows the leader.
    func routedClient() throws -> RPCClient {
        var options = RPCClientOptions()
        options.followsLeader = true
        return try RPCClient(context: context, endpoints: rpc, options: options, logger: logger)
    }

    func create(_ client: RPCClient, _ name: String, timeoutMilliseconds: Int = 2_000) throws(ServiceError) -> Int64 {
        try client.call("catalog.create", PlaceInput(name: name, category: "cafe", lat: 60.17, lon: 24.94), as: Place.self, timeoutMilliseconds: timeoutMilliseconds).id
    }

    @Test func writesGoThroughTheLeaderAndSurviveItsDeath() throws {
        var replicas = try start([1, 2, 3])
        let first = try #require(leader(of: replicas))
        let writer = try client(replicas[first]!)
        var ids: [Int64] = []
        for n in 0..<20 {
            ids.append(try writer.call("catalog.create", PlaceInput(name: "Replicated \(n)", category: "cafe", lat: 60.17, lon: 24.94), as: Place.self).id)
        }
        // A backup from the leader, and one from a follower once it applied them, are plain
        // files with every acknowledged write (the outbox too).
        let backup = try writer.call("sys.backup", BackupRequest(to: scratch.file("backup.sqlite")), as: BackupReply.self, timeoutMilliseconds: 10_000)
        #expect(backup.bytes > 0 && backup.epoch != nil && (backup.head ?? 0) >= Int64(ids.count), "\(backup)")
        writer.close()
        do {
            let follower = try client(try #require(replicas.first { $0.key != first }?.value))
            defer { follower.close() }
            #expect(eventually { (try? follower.call("catalog.get", ["id": ids.last!], as: LocalizedPlace.self)) != nil })
            let copy = try follower.call("sys.backup", BackupRequest(to: scratch.file("follower.sqlite")), as: BackupReply.self, timeoutMilliseconds: 10_000)
            #expect(copy.epoch == backup.epoch && copy.head == backup.head, "\(copy)")
        }
        let roles = replicas.mapValues { stats($0)?.role }
        #expect(roles.values.filter { $0 == "leader" }.count == 1 && roles.values.filter { $0 == "follower" }.count == 2, "\(roles)")

        for (n, replica) in replicas where n != first {
            let follower = try client(replica)
            defer { follower.close() }
            // Acknowledged means held by a majority; this follower has it once it has applied it.
            #expect(eventually { (try? follower.call("catalog.get", ["id": ids.last!], as: LocalizedPlace.self)) != nil }, "replica \(n)")
            for id in ids { #expect((try? follower.call("catalog.get", ["id": id], as: LocalizedPlace.self))?.place.name == "Replicated \(id - ids[0])") }
            var refusal: ServiceError?
            do {
                _ = try follower.call("catalog.create", PlaceInput(name: "Alone", category: "cafe", lat: 0, lon: 0), as: Place.self)
            } catch {
                refusal = error
            }
            let said = refusal.map { "\($0)" } ?? "took the write"
            #expect(refusal?.code == .unavailable && refusal?.leader == first && said.contains("replica \(first)"), "replica \(n): \(said)")
            // A read that does not say how stale it may be is the leader's too.
            let strings = Result { () throws(ServiceError) in try follower.request(type: "strings.get", body: Data(#"{"lang":"en"}"#.utf8)) }
            #expect(strings.failureCode == .unavailable, "replica \(n)")
        }

        // The leader is killed: another takes writes, with every acknowledged one (how soon is
        // bench/replication's figure, not a test's).
        #expect(replicas[first]!.stop(with: SIGKILL) == .signal(SIGKILL))
        let survivors = replicas.filter { $0.key != first }
        let second = try #require(leader(of: survivors))
        let resumed = try client(replicas[second]!)
        var next: Place?
        _ = eventually(seconds: 20) {
            next = try? resumed.call("catalog.create", PlaceInput(name: "After", category: "cafe", lat: 60.17, lon: 24.94), as: Place.self)
            return next != nil
        }
        #expect(next != nil, "no write taken after the leader was killed")
        for id in ids { #expect((try? resumed.call("catalog.get", ["id": id], as: LocalizedPlace.self)) != nil, "place \(id)") }
        resumed.close()

        // The killed replica comes back from its own Raft log, and catches up.
        replicas[first] = try start([first])[first]
        let back = try client(replicas[first]!)
        defer { back.close() }
        #expect(eventually { (try? back.call("catalog.get", ["id": next?.id ?? -1], as: LocalizedPlace.self)) != nil })
        #expect(stats(replicas[first]!)?.role == "follower")
        for replica in replicas.values { #expect(replica.terminate() == 0) }
    }
}

extension Result where Failure == ServiceError {
    /// The error's code, nil on success.
    var failureCode: ErrorCode? {
        guard case .failure(let error) = self else { return nil }
        return error.code
    }
}

extension ReplicatedCatalogTests {
    /// What `gateway.status` says of the catalog's replicas.
    func replicaHealth(_ gateway: GatewayConnection, id: Int) -> [[String: Any]] {
        let status = json(gateway.call(#"{"jsonrpc":"2.0","id":\#(id),"method":"gateway.status"}"#))
        let backends = (status["result"] as? [String: Any])?["backends"] as? [[String: Any]] ?? []
        return backends.first { $0["service"] as? String == "catalog" }?["replicas"] as? [[String: Any]] ?? []
    }

    @Test func clientsFollowTheLeaderThroughItsDeathAndTheGatewayShowsEachReplica() throws {
        var replicas = try start([1, 2, 3])
        let first = try #require(leader(of: replicas))
        let routed = try routedClient()
        defer { routed.close() }
        // Whichever replica leads, a client that follows the leader has its writes taken.
        var acknowledged: [Int64] = []
        for n in 0..<10 { acknowledged.append(try create(routed, "Routed \(n)")) }

        let gateway = try ChildProcess(
            "tourbus-gateway", folder: scratch.path + "/gateway",
            arguments: ["--listen", "127.0.0.1:0", "--peer", "catalog=" + rpc.joined(separator: ","), "--peer-replicated", "catalog"])
        defer { _ = gateway.terminate() }
        let port = UInt16((gateway.endpoints["listen"] as? String)?.split(separator: ":").last ?? "") ?? 0
        let c = try GatewayConnection(port: port)
        var health: [[String: Any]] = []
        #expect(
            eventually(seconds: 10) {
                health = replicaHealth(c, id: 1)
                return health.count == 3 && health.allSatisfy { $0["up"] as? Bool == true && $0["lag"] is Int }
            }, "\(health)")
        #expect(health.filter { $0["ready"] as? Bool == true }.map { $0["replica"] as? Int } == [first], "\(health)")
        #expect(Set(health.compactMap { $0["role"] as? String }) == ["leader", "follower"], "\(health)")
        // The gateway's check found the leader, so its reads go there too: the last write is read.
        let read = c.reply(#"{"jsonrpc":"2.0","id":2,"method":"catalog.get","params":{"id":\#(acknowledged.last!)}}"#)
        #expect(read.succeeded, "\(read)")

        // An operator hands leadership on (before stopping a host): the client follows.
        let target = first % 3 + 1
        let handed = try routed.call("sys.transfer", TransferRequest(to: target), as: TransferReply.self, timeoutMilliseconds: 15_000)
        #expect(handed.leader == target)
        acknowledged.append(try create(routed, "Handed on"))
        #expect(leader(of: replicas) == target)
        let wrong = Result { () throws(ServiceError) in try routed.call("sys.transfer", TransferRequest(to: 9), as: TransferReply.self) }
        #expect(wrong.failureCode == .invalidArgument)

        // The leader dies under the writer: the writes the client had acknowledged stay, and new
        // ones are taken again once another replica leads (the client finds it itself).
        #expect(replicas[target]!.stop(with: SIGKILL) == .signal(SIGKILL))
        let killed = Date()
        var resumedAfter: TimeInterval?
        var taken = 0
        for n in 0..<400 where taken < 10 && Date().timeIntervalSince(killed) < 30 {
            if let id = try? create(routed, "After \(n)", timeoutMilliseconds: 1_000) {
                acknowledged.append(id)
                taken += 1
                if resumedAfter == nil { resumedAfter = Date().timeIntervalSince(killed) }
            }
        }
        #expect(taken == 10, "writes resumed after \(resumedAfter.map { "\($0) s" } ?? "never")")
        for id in acknowledged {
            #expect((try? routed.call("catalog.get", ["id": id], as: LocalizedPlace.self, timeoutMilliseconds: 2_000)) != nil, "place \(id)")
        }
        #expect(
            eventually(seconds: 10) {
                health = replicaHealth(c, id: 3)
                let down = health.first { $0["replica"] as? Int == target }
                return down?["up"] as? Bool == false && health.contains { $0["ready"] as? Bool == true }
            }, "\(health)")
        replicas[target] = nil
        for replica in replicas.values { #expect(replica.terminate() == 0) }
    }
}

/// A child handed from the thread that started it to the test's.
struct UncheckedChild: @unchecked Sendable {
    let child: ChildProcess
    init(_ child: ChildProcess) { self.child = child }
}
