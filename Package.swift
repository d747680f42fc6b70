// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Tourbus",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "tourbus-catalog", targets: ["tourbus-catalog"]),
        .executable(name: "tourbus-search", targets: ["tourbus-search"]),
        .executable(name: "tourbus-social", targets: ["tourbus-social"]),
        .executable(name: "tourbus-notify", targets: ["tourbus-notify"]),
        .executable(name: "tourbus-favorites", targets: ["tourbus-favorites"]),
        .executable(name: "tourbus-gateway", targets: ["tourbus-gateway"]),
        .executable(name: "tourbus", targets: ["tourbus"]),
    ],
    targets: [
        // C libraries from Debian's -dev packages. libzmq's pkg-config file carries flags
        // SwiftPM refuses (-isystem), and its headers live in /usr/include anyway.
        .systemLibrary(name: "CZeroMQ", providers: [.apt(["libzmq3-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
        // Node.js's former HTTP/1.1 parser, for the gateway's HTTP face (issue 31).
        .systemLibrary(name: "CHttpParser", providers: [.apt(["libhttp-parser-dev"])]),
        // Linux's epoll header (in libc), for the gateway's event loops.
        .systemLibrary(name: "CEpoll"),
        // Raft (libraft, on libuv) and dqlite's SQLite VFS, whose commits it replicates (issue 34).
        .systemLibrary(name: "CRaft", providers: [.apt(["libraft-dev", "libuv1-dev", "libdqlite-dev"])]),

        // Shared rooms.
        // Key files as `tourbus keys` writes them (a public and a secret line, owner-only): CURVE
        // keys (Bus) and the catalog's signing key (Sealing) read and write them alike.
        .target(name: "KeyFiles"),
        .target(name: "Bus", dependencies: ["CZeroMQ", "KeyFiles"]),
        .target(name: "Storage", dependencies: ["CSQLite", "Geo"]),
        .target(name: "Geo"),
        // The libsodium calls more than one module makes (random bytes, BLAKE2b, sealed boxes,
        // Ed25519 signatures and their key files), with typed errors: social, the catalog, the CLI.
        .target(name: "Sealing", dependencies: ["CSodium", "KeyFiles"]),
        // Georeferenced tour maps with no service around them: JPEG checks, the affine fit of
        // control points, the tile pyramid and the demo's drawn maps (libjpeg-turbo); social's
        // profile photos use its checks and its resampling too.
        .target(name: "TourMaps", dependencies: ["Geo", "CTurboJPEG"]),
        // JPEG uploads in base64 chunks, as rows of the owning service's tables (tour maps,
        // profile photos), and what a refused JPEG answers; catalog imports use its chunks too.
        .target(name: "Uploads", dependencies: ["Bus", "Contracts", "Storage", "TourMaps", "KeyFiles"]),
        // Wire types more than one module reads (places, event bodies, auth payloads, replay
        // and snapshot, paging), declared once by their owner; depends on Bus only.
        .target(name: "Contracts", dependencies: ["Bus", "Geo"]),
        // A process's life and configuration and the event subscriber's loop, with no storage: what
        // the gateway shares with the services (Contracts for the sys.replay and sys.snapshot bodies).
        .target(name: "ServiceCore", dependencies: ["Contracts", "Bus"]),
        // What a service adds: its SQLite file, outbox relay, event subscribers, request runtime.
        // A database replicated to a majority of hosts before any commit is visible: dqlite's VFS
        // holds each commit's pages back, Raft (libraft) replicates them (issue 34).
        .target(name: "Replication", dependencies: ["CRaft", "Storage", "Bus"]),
        .target(name: "ServiceKit", dependencies: ["ServiceCore", "Contracts", "Bus", "Storage", "Geo", "Replication"]),

        // Services: domain code only; each depends on the shared rooms, never on another service.
        .target(name: "CatalogService", dependencies: ["ServiceKit", "ServiceCore", "Contracts", "Bus", "Storage", "Geo", "TourMaps", "Uploads", "ContentImport", "Sealing", "KeyFiles"]),
        .target(name: "SearchService", dependencies: ["ServiceKit", "ServiceCore", "Contracts", "Bus", "Storage", "Geo", "Routing", "ContentImport"]),
        .target(name: "SocialService", dependencies: ["ServiceKit", "ServiceCore", "Contracts", "Bus", "Storage", "Geo", "CSodium", "Sealing", "TourMaps", "Uploads", "KeyFiles"]),
        .target(name: "NotifyService", dependencies: ["ServiceKit", "ServiceCore", "Contracts", "Bus", "Storage", "Geo"]),
        .target(name: "FavoritesService", dependencies: ["ServiceKit", "ServiceCore", "Contracts", "Bus", "Storage", "Geo"]),
        // The gateway keeps nothing durable: no Storage, no SQLite, no Geo, not even through ServiceKit.
        .target(name: "Gateway", dependencies: ["ServiceCore", "Contracts", "Bus", "CEpoll", "CHttpParser", "KeyFiles"]),

        // Thin executables.
        .executableTarget(name: "tourbus-catalog", dependencies: ["CatalogService", "ServiceKit", "Sealing", "Bus"]),
        .executableTarget(name: "tourbus-search", dependencies: ["SearchService", "ServiceKit"]),
        .executableTarget(name: "tourbus-social", dependencies: ["SocialService", "ServiceKit"]),
        .executableTarget(name: "tourbus-notify", dependencies: ["NotifyService", "ServiceKit"]),
        .executableTarget(name: "tourbus-favorites", dependencies: ["FavoritesService", "ServiceKit"]),
        .executableTarget(name: "tourbus-gateway", dependencies: ["Gateway"]),
        // ServiceCore: the suite-file reader (`tourbus up --config`, `tourbus probe --config`); Storage: `tourbus restore`;
        // TourMaps: the demo tours' maps, drawn by `tourbus up`; ContentImport: zip archives for `tourbus import`.
        .target(name: "TourbusCLI", dependencies: ["Bus", "Contracts", "ServiceCore", "Storage", "Geo", "TourMaps", "ContentImport", "Sealing"]),
        .executableTarget(name: "tourbus", dependencies: ["TourbusCLI"]),
        // Content files from outside: a bounded XML reader of our own (no DTDs, so no entities) and
        // the Tourbus content format read into plain structs, and zip archives (our own DEFLATE
        // decoder and CRC-32, bounded against zip bombs); addresses from OpenStreetMap (Geo for distances).
        .target(name: "ContentImport", dependencies: ["Geo"]),
        // Routes over OpenStreetMap streets: profiles after Routino's, contraction hierarchies,
        // snapping and many-to-many matrices. No service around it: the router executable's engine.
        .target(name: "Routing", dependencies: ["Geo", "ContentImport"]),
        // Open-loop load on the gateway's lines and its latency histogram (tourbus-bench load).
        .target(name: "LoadKit"),
        // Benchmark driver (bench/search, bench/load); talks to the real executables, imports no service.
        .executableTarget(name: "tourbus-bench", dependencies: ["Bus", "Contracts", "Geo", "LoadKit", "TourMaps", "ContentImport", "Routing"]),

        .testTarget(name: "BusTests", dependencies: ["Bus", "TestSupport"]),
        .testTarget(name: "LoadKitTests", dependencies: ["LoadKit"]),
        // Scripts/make_zip_fixtures.py is run by the zip and inflate tests with /usr/bin/python3.
        .testTarget(name: "ContentImportTests", dependencies: ["ContentImport", "TestSupport"], exclude: ["Scripts"]),
        .testTarget(name: "ContractsTests", dependencies: ["Contracts", "Bus", "KeyFiles", "TestSupport"]),
        .testTarget(name: "StorageTests", dependencies: ["Storage", "TestSupport"]),
        .testTarget(name: "ReplicationTests", dependencies: ["Replication", "Storage", "Bus", "TestSupport"]),
        .testTarget(name: "GeoTests", dependencies: ["Geo", "TestSupport"]),
        .testTarget(name: "RoutingTests", dependencies: ["Routing", "ContentImport", "Geo", "TestSupport"]),
        .testTarget(name: "TourMapsTests", dependencies: ["TourMaps", "Geo", "TestSupport"]),
        .testTarget(name: "ServiceCoreTests", dependencies: ["ServiceCore", "Gateway", "Bus", "TestSupport"]),
        .testTarget(name: "ServiceKitTests", dependencies: ["ServiceKit", "ServiceCore", "Bus", "Storage", "Replication", "TestSupport"]),
        // Helpers shared by test targets (transcript matching, a stand-in publisher, a search of a
        // database for a user's rows); never linked into the executables.
        .target(name: "TestSupport", dependencies: ["Bus", "Contracts", "ServiceKit", "Storage"], path: "Tests/TestSupport"),
        .testTarget(name: "CatalogServiceTests", dependencies: ["CatalogService", "ContentImport", "Sealing", "TourMaps", "Uploads", "Geo", "Contracts", "ServiceKit", "ServiceCore", "Bus", "Storage", "TestSupport"]),
        .testTarget(name: "GatewayTests", dependencies: ["Gateway", "Contracts", "Bus", "ServiceCore", "CatalogService", "SearchService", "SocialService", "TestSupport"]),
        .testTarget(name: "SearchServiceTests", dependencies: ["SearchService", "CatalogService", "TourbusCLI", "ContentImport", "Routing", "Contracts", "ServiceKit", "ServiceCore", "Bus", "Storage", "Geo", "TestSupport"]),
        .testTarget(name: "NotifyServiceTests", dependencies: ["NotifyService", "Gateway", "Contracts", "ServiceKit", "ServiceCore", "Bus", "Storage", "Geo", "TestSupport"]),
        .testTarget(name: "FavoritesServiceTests", dependencies: ["FavoritesService", "Gateway", "Contracts", "ServiceKit", "ServiceCore", "Bus", "Storage", "Geo", "TestSupport"]),
        .testTarget(name: "SocialServiceTests", dependencies: ["SocialService", "Sealing", "TourMaps", "Contracts", "ServiceKit", "ServiceCore", "Bus", "Storage", "TestSupport"]),
        // Resources/redis_py_client.py is run by RedisClientTests with the interpreter of .build/pyenv.
        .testTarget(name: "SystemTests", dependencies: ["Bus", "Sealing", "Contracts", "CatalogService", "TourMaps", "Geo", "TestSupport"], exclude: ["Resources"]),
    ],
    swiftLanguageModes: [.v6]
)

// Release builds leave out the run-time exclusivity checks (`swift_beginAccess` on every access
// to a class's stored property or a captured variable): they were a tenth of the instructions of
// every request-path thread, and `catalog.get` through the gateway ran 15-20% faster without
// them. Debug builds, which every test runs, keep them, so an overlapping access still traps there.
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]
}
