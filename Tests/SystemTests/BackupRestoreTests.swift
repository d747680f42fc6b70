import Bus
import Contracts
import Foundation
import Testing
import TestSupport

/// `tourbus backup` and `tourbus restore` on a real catalog under writes, followed by a real
/// search: what was acknowledged before the backup comes back, what came after does not, and
/// search rebuilds to agree with the restored catalog.
@Suite(.serialized) struct BackupRestoreTests {
    /// A place's id and name, as the catalog answers.
    struct Created: Decodable { var id: Int; var name: String }

    func create(_ client: RPCClient, _ name: String, _ n: Int) throws -> Created {
        try client.call("catalog.create", PlaceInput(name: name, category: "park", lat: -33.9 + Double(n % 50) * 0.001, lon: 151.1 + Double((n / 50) % 100) * 0.001),
                        as: Created.self)
    }

    /// Every place (id and name) search's viewport holds around the test's places (paged; bounded).
    func searchPlaces(_ c: GatewayConnection) -> [Int: String] {
        var places: [Int: String] = [:]
        var cursor: String?
        for page in 0..<100 {
            let params = #"{"bbox":{"south":-34,"west":151,"north":-33.7,"east":151.3},"limit":50"# + (cursor.map { #","cursor":"\#($0)"}"# } ?? "}")
            let reply = json(c.call(#"{"jsonrpc":"2.0","id":\#(page),"method":"search.viewport","params":\#(params)}"#))
            let result = reply["result"] as? [String: Any]
            for hit in (result?["hits"] as? [[String: Any]]) ?? [] {
                if let id = hit["id"] as? Int, let name = hit["name"] as? String { places[id] = name }
            }
            cursor = result?["next_cursor"] as? String
            if cursor == nil { break }
        }
        return places
    }

    /// Polls search (bounded: 30 s) until it holds exactly `places`; true if it did.
    func searchHolds(_ c: GatewayConnection, _ places: [Created]) -> Bool {
        let expected = Dictionary(places.map { ($0.id, $0.name) }, uniquingKeysWith: { _, last in last })
        for _ in 0..<300 {
            if searchPlaces(c) == expected { return true }
            usleep(100_000)
        }
        return false
    }

    /// How many times search rebuilt its copy of the catalog from `sys.snapshot`.
    func searchSnapshots(_ suite: SuiteFixture, _ context: ZMQContext) throws -> Int {
        struct Stats: Decodable {
            struct Following: Decodable { var source: String; var snapshots: Int }
            var subscriptions: [Following]?
        }
        let client = try RPCClient(context: context, endpoints: [suite.search?.rpc ?? ""], logger: Logger(component: "test", level: .error))
        defer { client.close() }
        return try client.call(Methods.System.stats.name, Empty(), as: Stats.self).subscriptions?.first { $0.source == "catalog" }?.snapshots ?? -1
    }

    /// `searchRuns`: search follows the catalog throughout (it sees the new epoch live);
    /// otherwise it is stopped before the restore and started after the restored catalog has
    /// taken more writes than it had before, so only the epoch tells it that seqs it has
    /// passed now name other events.
    @Test(arguments: [true, false])
    func aCatalogRestoredFromABackupUnderWritesKeepsWhatCameBeforeAndSearchRebuildsToIt(searchRuns: Bool) throws {
        let suite = try SuiteFixture(withSearch: true)
        let tourbus = try ChildProcess.executable("tourbus").path
        let backups = TemporaryFolder("backups")
        let context = try ZMQContext()
        let client = try RPCClient(context: context, endpoints: [suite.catalogEndpoint], logger: Logger(component: "test", level: .error))
        defer { client.close() }

        let startHead = try client.call(Methods.System.stats.name, Empty(), as: StatsProbe.self).outbox?.head ?? -1
        var before: [Created] = []
        for i in 0..<20 { before.append(try create(client, "Before \(i)", i)) }

        // A writer goes on throughout the backup; each write is stamped with when it was acknowledged.
        let during = Locked<[(place: Created, at: UInt64)]>([])
        let stop = StopFlag()
        let writer = Thread {
            for i in 0..<10_000 where !stop.isSet {
                guard let place = try? create(client, "During \(i)", 20 + i) else { continue }
                during.withLock { $0.append((place, monotonicNanos())) }
            }
        }
        writer.start()
        for _ in 0..<500 where during.value.count < 5 { usleep(10_000) }
        let asked = monotonicNanos()
        let backup = try BoundedRun(tourbus, ["backup", "--service", suite.catalogEndpoint, "--to", backups.path], timeout: 60)
        let answered = monotonicNanos()
        for _ in 0..<500 where !during.value.contains(where: { $0.at > answered }) { usleep(10_000) }
        stop.set()
        for _ in 0..<500 where !writer.isFinished { usleep(10_000) }
        #expect(backup.exit == .status(0), "\(backup.errors)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(backup.output.utf8)) as? [String: Any])
        let file = try #require(report["file"] as? String)
        #expect(file.hasPrefix(backups.path + "/catalog-") && file.hasSuffix("Z.sqlite") && FileManager.default.fileExists(atPath: file))
        #expect((report["head"] as? Int ?? 0) >= 25 && (report["bytes"] as? Int ?? 0) > 0 && report["epoch"] is String)

        var after: [Created] = []
        for i in 0..<20 { after.append(try create(client, "After \(i)", 15_000 + i)) }
        let c = try suite.adminConnection()
        #expect(searchHolds(c, before + during.value.map(\.place) + after), "search never held every place written")

        // The gateway offers no sys.* to clients: not sys.backup either.
        let viaGateway = json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"sys.backup","params":{"to":"\#(backups.path)/gateway.sqlite"}}"#))
        #expect(viaGateway["error"] != nil && !FileManager.default.fileExists(atPath: backups.path + "/gateway.sqlite"))

        // A restore onto the running catalog is refused, and changes nothing.
        let refused = try BoundedRun(tourbus, ["restore", "--service", "catalog", "--from", file, "--data-dir", suite.folder], timeout: 60)
        #expect(refused.exit == .status(1) && refused.errors.contains("in use"), "\(refused.exit.map { "\($0)" } ?? "running"): \(refused.errors)")
        #expect(try client.call("catalog.get", ["id": after[19].id], as: Created.self).name == "After 19")

        suite.stopCatalog()
        if !searchRuns { suite.stopSearch() }
        let restore = try BoundedRun(tourbus, ["restore", "--service", "catalog", "--from", file, "--data-dir", suite.folder], timeout: 60)
        #expect(restore.exit == .status(0), "\(restore.errors)")
        let restored = try #require(try JSONSerialization.jsonObject(with: Data(restore.output.utf8)) as? [String: Any])
        #expect(restored["previous_epoch"] as? String == report["epoch"] as? String && restored["epoch"] as? String != report["epoch"] as? String)
        #expect(restored["head"] as? Int == report["head"] as? Int)
        try suite.startCatalog()

        // Every write acknowledged before the backup was asked for is there; none acknowledged after it answered, nor any later one.
        func exists(_ place: Created) throws -> Bool {
            do {
                return try client.call("catalog.get", ["id": place.id], as: Created.self).name == place.name
            } catch where error.code == .notFound {
                return false
            }
        }
        for place in before + during.value.filter({ $0.at < asked }).map(\.place) { #expect(try exists(place), "\(place.name) was lost") }
        for place in during.value.filter({ $0.at > answered }).map(\.place) + after { #expect(try !exists(place), "\(place.name) came back") }
        var kept = try (before + during.value.map(\.place)).filter { try exists($0) }
        #expect(Int64(kept.count) == Int64(report["head"] as? Int ?? -1) - startHead, "the backup's head does not count the places it holds")

        if !searchRuns {
            // More writes than were lost, so the restored head passes the one search last saw.
            let lost = during.value.count + after.count - (kept.count - before.count)
            for i in 0..<(lost + 5) { kept.append(try create(client, "Anew \(i)", 600 + i)) }
            try suite.startSearch()
        }
        // Search rebuilds from the restored catalog: none of the lost places stays in it.
        #expect(searchHolds(c, kept), "search does not agree with the restored catalog")
        #expect(try searchSnapshots(suite, context) >= 1, "search did not rebuild from a snapshot")
        let stats = try client.call(Methods.System.stats.name, Empty(), as: StatsProbe.self)
        #expect(stats.outbox?.epoch == restored["epoch"] as? String)
    }

    @Test func onASecuredBusOnlyAListedKeyGetsABackup() throws {
        let suite = try SuiteFixture(secured: true)
        let tourbus = try ChildProcess.executable("tourbus").path
        let backups = TemporaryFolder("backups")
        let catalogKey = try CurveKeyPair.z85(try #require(suite.keys["catalog"]).publicKey)
        let signed = try BoundedRun(tourbus, ["backup", "--service", suite.catalogEndpoint, "--to", backups.path,
                                              "--curve-key", suite.folder + "/operator.key", "--server-key", catalogKey], timeout: 60)
        #expect(signed.exit == .status(0) && signed.output.contains("\"service\" : \"catalog\""), "\(signed.errors)")
        // A key the suite does not list never reaches the service: no file is written.
        let stranger = try CurveKeyPair.generate()
        try stranger.write(keyFile: backups.file("stranger.key"), name: "stranger")
        let refused = try BoundedRun(tourbus, ["backup", "--service", suite.catalogEndpoint, "--to", backups.path, "--timeout-ms", "1500",
                                               "--curve-key", backups.file("stranger.key"), "--server-key", catalogKey], timeout: 60)
        #expect(refused.exit == .status(1), "\(refused.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: backups.path).filter { $0.hasSuffix(".sqlite") }.count == 1)
    }

    @Test func theCommandsRefuseWhatTheyCannotDo() throws {
        let tourbus = try ChildProcess.executable("tourbus").path
        let scratch = TemporaryFolder("restore-args")
        let noFolder = try BoundedRun(tourbus, ["backup", "--service", "tcp://127.0.0.1:9", "--to", scratch.file("missing")], timeout: 30)
        #expect(noFolder.exit == .status(2) && noFolder.errors.contains("no such folder"), "\(noFolder.errors)")
        let neither = try BoundedRun(tourbus, ["restore", "--service", "catalog", "--from", scratch.file("x.sqlite")], timeout: 30)
        #expect(neither.exit == .status(2) && neither.errors.contains("exactly one of --data-dir DIR and --db FILE"), "\(neither.errors)")
        let badName = try BoundedRun(tourbus, ["restore", "--service", "../etc", "--from", scratch.file("x.sqlite"), "--data-dir", scratch.path], timeout: 30)
        #expect(badName.exit == .status(2) && badName.errors.contains("--service takes a service name"), "\(badName.errors)")
        let noCopy = try BoundedRun(tourbus, ["restore", "--service", "catalog", "--from", scratch.file("x.sqlite"), "--data-dir", scratch.path], timeout: 30)
        #expect(noCopy.exit == .status(1) && noCopy.errors.contains("does not exist"), "\(noCopy.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).isEmpty)
        // A replica's database is rebuilt from its Raft log: a file put beside it would be ignored.
        let copy = scratch.file("copy.sqlite")
        #expect(FileManager.default.createFile(atPath: copy, contents: Data("a copy".utf8)))
        try FileManager.default.createDirectory(atPath: scratch.file("catalog-2.raft"), withIntermediateDirectories: false)
        let replicas = try BoundedRun(tourbus, ["restore", "--service", "catalog", "--from", copy, "--data-dir", scratch.path], timeout: 30)
        #expect(replicas.exit == .status(1) && replicas.errors.contains("replicas of a replicated catalog (catalog-2.raft)"), "\(replicas.errors)")
        let replica = try BoundedRun(tourbus, ["restore", "--service", "catalog", "--from", copy, "--db", scratch.file("catalog-2.sqlite")], timeout: 30)
        #expect(replica.exit == .status(1) && replica.errors.contains("rebuilt from its Raft log"), "\(replica.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).sorted() == ["catalog-2.raft", "copy.sqlite"])
    }

    /// The part of `sys.stats` this test reads.
    struct StatsProbe: Decodable {
        struct Outbox: Decodable { var epoch: String; var head: Int64 }
        var outbox: Outbox?
    }
}
