import Bus
import Foundation
import ServiceCore

/// The web app's files, served by the gateway at `/` (`--web-dir`), with Leaflet at
/// `/vendor/leaflet/` (`--leaflet-dir`, Debian's libjs-leaflet): read once at start into
/// memory, each with its content type and tag, and the app's settings as `/config.json`.
///
/// Only regular files of the types a page uses are taken (not dot files, not compressed or
/// source-map copies), each at most `maxFileBytes` and all at most `maxTotalBytes`.
final class WebFiles: Sendable {
    struct File: Sendable {
        var bytes: [UInt8]
        var contentType: String
        /// A strong tag from the bytes.
        var etag: String
        /// The app's own files are checked again on each load (`no-cache`, answered 304 while
        /// unchanged); Leaflet's, a Debian package's, for a day.
        var cacheControl: String
    }

    static let maxFileBytes = 4 << 20
    static let maxTotalBytes = 32 << 20

    static let contentTypes: [String: String] = [
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
        "json": "application/json", "svg": "image/svg+xml", "png": "image/png", "jpg": "image/jpeg", "ico": "image/x-icon",
        "webmanifest": "application/manifest+json", "txt": "text/plain; charset=utf-8",
    ]

    /// Files by their path (`/index.html`, `/vendor/leaflet/leaflet.js`).
    let files: [String: File]
    /// The Content-Security-Policy of the app's pages: its own scripts and styles only, images
    /// from itself, the map's tile server and any https site (the places' linked photos, which
    /// admins write), connections to itself.
    let policy: String

    /// The map's background tiles: OpenStreetMap's standard tile server unless told otherwise.
    struct Tiles: Sendable, Equatable {
        var url = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
        var attribution = "© OpenStreetMap contributors"
    }

    init(app: String, leaflet: String?, tiles: Tiles) throws(ConfigError) {
        var files: [String: File] = [:]
        var total = 0
        try WebFiles.read(app, at: "/", cache: "no-cache", into: &files, total: &total)
        if let leaflet { try WebFiles.read(leaflet, at: "/vendor/leaflet/", cache: "public, max-age=86400", into: &files, total: &total) }
        guard files["/index.html"] != nil else { throw ConfigError("--web-dir \(app): no index.html") }
        struct Settings: Encodable {
            var tiles: Tiles
            struct Tiles: Encodable {
                var url: String
                var attribution: String
            }
        }
        let settings = (try? JSONCoding.encoder.encode(Settings(tiles: .init(url: tiles.url, attribution: tiles.attribution)))) ?? Data("{}".utf8)
        files["/config.json"] = WebFiles.file(Array(settings), type: "application/json", cache: "no-cache")
        self.files = files
        // An https tile server is one of the https sites already.
        let tileOrigin = WebFiles.origin(of: tiles.url).flatMap { $0.hasPrefix("https://") ? nil : " " + $0 } ?? ""
        policy =
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: https:\(tileOrigin); connect-src 'self'; "
            + "font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }

    /// `scheme://host[:port]` of a URL template, or nil when it has none.
    static func origin(of url: String) -> String? {
        guard let scheme = url.range(of: "://") else { return nil }
        let rest = url[scheme.upperBound...]
        let host = rest.prefix { $0 != "/" }
        guard !host.isEmpty, !host.contains(where: { " ;'\"".contains($0) }) else { return nil }
        return String(url[..<scheme.upperBound]) + host
    }

    private static func file(_ bytes: [UInt8], type: String, cache: String) -> File {
        File(bytes: bytes, contentType: type, etag: HTTPResponse.tag(bytes), cacheControl: cache)
    }

    private static func read(_ directory: String, at prefix: String, cache: String, into files: inout [String: File], total: inout Int) throws(ConfigError) {
        let root = URL(fileURLWithPath: directory).standardizedFileURL
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ConfigError("\(directory) is not a directory")
        }
        guard let walk = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey], options: [.skipsHiddenFiles]) else { return }
        for case let url as URL in walk {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true,
                let type = contentTypes[url.pathExtension.lowercased()]
            else { continue }
            let relative = url.standardizedFileURL.path.dropFirst(root.path.count).drop { $0 == "/" }
            guard let data = FileManager.default.contents(atPath: url.path) else { throw ConfigError("cannot read \(url.path)") }
            guard data.count <= maxFileBytes else { throw ConfigError("\(url.path) is over \(maxFileBytes) bytes") }
            total += data.count
            guard total <= maxTotalBytes else { throw ConfigError("the web app's files are over \(maxTotalBytes) bytes") }
            files[prefix + relative] = file(Array(data), type: type, cache: cache)
        }
    }

    /// The file a GET of `path` answers (`/` is `/index.html`).
    func file(at path: Substring) -> File? { files[path == "/" ? "/index.html" : String(path)] }
}
