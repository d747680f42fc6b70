import Bus
import ContentImport
import Contracts
import Foundation
import Routing
import ServiceCore
import ServiceKit
import Storage
import Synchronization

// Search's routes (Protocols/routing.md). The catalog keeps each OSM import's street network;
// search keeps a copy of each in its own database, fetched in chunks by a thread of its own,
// and builds one route engine per profile from all of them. A new network is built beside the
// old one, which answers until the new one replaces it: queries never wait for a build.

/// The route engines a search service answers from, shared by its threads.
public final class StreetRoutes: Sendable {
    /// The engines, and the networks (id → checksum) they were built from.
    struct Built: Sendable {
        var engines: [RouteProfile: RouteEngine]
        var sets: [Int64: String]
    }

    private let built = Mutex<Built?>(nil)
    /// Woken when the catalog says its networks changed.
    let signal = BackgroundSignal()
    /// How long a fetch of the catalog waits, and how often the list is asked for anyway.
    static let callMilliseconds = 5_000
    static let idleMilliseconds = 60_000

    public init() {}

    /// The engine for a mode, nil while no network is built (transit has none).
    func engine(_ mode: TravelMode) -> RouteEngine? {
        guard let profile = Self.profile(mode) else { return nil }
        return built.withLock { $0?.engines[profile] }
    }

    static func profile(_ mode: TravelMode) -> RouteProfile? {
        switch mode {
        case .walking: .foot
        case .bicycling: .bicycle
        case .driving: .motorcar
        case .transit: nil
        }
    }

    static let migrations: [Migration] = [
        Migration(
            domain: "streets", version: 1,
            sql: """
                CREATE TABLE street_sets (
                    id       INTEGER PRIMARY KEY,
                    checksum TEXT NOT NULL,
                    bytes    BLOB NOT NULL
                );
                """)
    ]

    /// The background work: fetch what the catalog has that this copy lacks, forget what it
    /// dropped, and build anew when the networks changed (or were never built since the start).
    func work() -> BackgroundWork {
        BackgroundWork(name: "streets", signal: signal, idleMilliseconds: Self.idleMilliseconds) { [self] db, signal, context in
            // A fetch that fails leaves the copies as they were: they are built all the same
            // (after a restart too), and the fetch is tried again at the next wake.
            var failure: (any Error)?
            do { try sync(db, peers: context.peers, logger: context.logger) } catch { failure = error }
            try buildIfChanged(db, signal: signal, logger: context.logger)
            if let failure { throw failure }
            return false
        }
    }

    /// Brings the copies in line with the catalog's list; a catalog that cannot be reached
    /// leaves them as they are (routes go on from the last networks fetched).
    func sync(_ db: Database, peers: PeerClients, logger: Logger) throws {
        let catalog: RPCClient
        let wanted: StreetSetList
        do {
            catalog = try peers.client("catalog")
            wanted = try catalog.call(Methods.Streets.list.name, Empty(), as: StreetSetList.self, timeoutMilliseconds: Self.callMilliseconds)
        } catch {
            logger.debug("street networks not listed", ["error": error])
            return
        }
        let held = try checksums(db)
        for set in wanted.sets where held[set.id] != set.checksum {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(set.bytes)
            while bytes.count < set.bytes {
                let chunk = try catalog.call(
                    Methods.Streets.chunk.name, StreetChunkRequest(setId: set.id, offset: bytes.count), as: StreetChunk.self,
                    timeoutMilliseconds: Self.callMilliseconds)
                guard let data = Data(base64Encoded: chunk.data), !data.isEmpty, chunk.total == set.bytes else {
                    throw ServiceError(.internal, "street network \(set.id): a chunk at \(bytes.count) is not what the list said")
                }
                bytes += data
            }
            guard StreetSetInfo.checksum(bytes) == set.checksum else {
                throw ServiceError(.internal, "street network \(set.id): the bytes do not match their checksum")
            }
            try db.transaction {
                try db.run("INSERT OR REPLACE INTO street_sets (id, checksum, bytes) VALUES (?, ?, ?)", set.id, set.checksum, Data(bytes))
            }
            logger.info("street network fetched", ["set": set.id, "bytes": set.bytes, "nodes": set.nodes, "ways": set.ways])
        }
        let gone = Set(held.keys).subtracting(wanted.sets.map(\.id))
        if !gone.isEmpty {
            try db.transaction { for id in gone { try db.run("DELETE FROM street_sets WHERE id = ?", id) } }
        }
    }

    /// Builds every profile's engine from the copies when they are not what the engines were
    /// built from; the old engines answer until then.
    func buildIfChanged(_ db: Database, signal: BackgroundSignal, logger: Logger) throws {
        let held = try checksums(db)
        let current = built.withLock { $0?.sets }
        guard held != (current ?? [:]) || (current == nil && !held.isEmpty) else { return }
        guard !held.isEmpty else {
            built.withLock { $0 = nil }
            return
        }
        let started = monotonicNanos()
        var networks: [OSMStreets] = []
        for row in try db.query("SELECT id, bytes FROM street_sets ORDER BY id") {
            let data: Data = try row.decode("bytes")
            // One set that does not read is left out (and said), not every route with it.
            do {
                networks.append(try OSMStreets(encoded: [UInt8](data)))
            } catch {
                logger.warn("street network left out", ["set": try row.decode("id", as: Int64.self), "error": error])
            }
        }
        let streets = OSMStreets.merged(networks)
        var engines: [RouteProfile: RouteEngine] = [:]
        for profile in RouteProfile.allCases {
            if signal.isStopping { return }
            engines[profile] = RouteEngine(streets: streets, profile: profile)
        }
        built.withLock { $0 = Built(engines: engines, sets: held) }
        logger.info(
            "routes built",
            [
                "networks": held.count, "nodes": streets.nodes.count, "ways": streets.ways.count,
                "ms": (monotonicNanos() - started) / 1_000_000,
            ])
    }

    private func checksums(_ db: Database) throws -> [Int64: String] {
        var sets: [Int64: String] = [:]
        for row in try db.query("SELECT id, checksum FROM street_sets") { sets[try row.decode("id")] = try row.decode("checksum") }
        return sets
    }
}
