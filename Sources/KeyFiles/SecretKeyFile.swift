import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Why a secret key file could not be read or written: the reason alone, which each kind of key
/// file puts after its own name (`CURVE key file PATH: …`, `signing key file PATH: …`).
public struct KeyFileProblem: Error, Sendable {
    public let why: String
    /// Whether the file is not there at all (a caller may say how to make one).
    public let missing: Bool

    init(_ why: String, missing: Bool = false) {
        self.why = why
        self.missing = missing
    }
}

/// A file that holds a key pair, as `tourbus keys` writes them (CURVE keys, and with `--signing`
/// the catalog's Ed25519 key): a `public: …` and a `secret: …` line, `#` comments, readable and
/// writable by its owner only. The encoding of the keys is the caller's.
public enum SecretKeyFile {
    /// Largest key file read; one holds two short lines and a comment.
    public static let maxBytes = 4_096

    /// The texts of the `public:` and `secret:` lines of the file at `path` (either may be
    /// missing), refusing a file that is not a regular one, that others than its owner may read
    /// or write, that is larger than `maxBytes`, or that has another line; `lines` names what is
    /// expected in that last refusal.
    public static func read(_ path: String, lines: String) throws(KeyFileProblem) -> (publicText: String?, secretText: String?) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw KeyFileProblem(String(cString: strerror(errno)), missing: errno == ENOENT) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw KeyFileProblem("not a regular file") }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw KeyFileProblem("mode \(String(mode, radix: 8)) lets others than its owner read or write it; it holds a secret key (chmod 600 \(path))")
        }
        guard info.st_size <= maxBytes, let data = FileManager.default.contents(atPath: path), data.count <= maxBytes else {
            throw KeyFileProblem("unreadable, or larger than \(maxBytes) bytes")
        }
        var publicText: String?
        var secretText: String?
        for line in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty || text.hasPrefix("#") { continue }
            if text.hasPrefix("public:") {
                guard publicText == nil else { throw KeyFileProblem("two 'public:' lines") }
                publicText = text.dropFirst("public:".count).trimmingCharacters(in: .whitespaces)
            } else if text.hasPrefix("secret:") {
                guard secretText == nil else { throw KeyFileProblem("two 'secret:' lines") }
                secretText = text.dropFirst("secret:".count).trimmingCharacters(in: .whitespaces)
            } else {
                throw KeyFileProblem("expected \(lines)")
            }
        }
        return (publicText, secretText)
    }

    /// Writes a new key file: `comment` (one line, after `# `), then the `public:` and `secret:`
    /// lines. The file is created with mode 0600, so the secret is never readable by others even
    /// for a moment, and an existing file is never overwritten.
    public static func create(_ path: String, comment: String, publicText: String, secretText: String) throws(KeyFileProblem) {
        let text = "# \(comment)\npublic: \(publicText)\nsecret: \(secretText)\n"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw KeyFileProblem(String(cString: strerror(errno))) }
        defer { close(fd) }
        let bytes = Array(text.utf8)
        guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw KeyFileProblem(String(cString: strerror(errno)))
        }
    }
}
