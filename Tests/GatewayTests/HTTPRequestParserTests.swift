@testable import Gateway
import TestSupport
import Testing

/// The HTTP/1.1 request reader: what a client sends, whole or in pieces, and every trick of
/// an attacker's that libhttp-parser refuses or that it is made to refuse.
@Suite struct HTTPRequestParserTests {
    typealias Refusal = HTTPRequestParser.Refusal

    /// Feeds `text` in pieces of `piece` bytes, as a socket might hand it over, keeping what
    /// is not used for the next read; the requests read and the refusal, if any.
    static func read(_ text: String, piece: Int = .max, limits: HTTPRequestParser.Limits = .init()) -> ([HTTPRequestParser.Request], Refusal?) {
        let parser = HTTPRequestParser(limits: limits)
        let bytes = Array(text.utf8)
        var buffered: [UInt8] = []
        var requests: [HTTPRequestParser.Request] = []
        var at = 0
        while at < bytes.count {
            let end = min(bytes.count, at + piece)
            buffered += bytes[at..<end]
            at = end
            let read = parser.read(buffered[...])
            requests += read.requests
            buffered.removeFirst(read.consumed)
            if let refusal = read.refusal { return (requests, refusal) }
        }
        return (requests, nil)
    }

    @Test func requestsWholeInPiecesAndPipelined() {
        let text =
            "POST /rpc HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"method\":\"x\"}"
            + "GET /openrpc.json HTTP/1.1\r\nHost: a\r\n\r\n"
            + "POST /rpc HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
            + "GET / HTTP/1.0\r\n\r\n"
        for piece in [Int.max, 1, 7, 64] {
            let (requests, refusal) = HTTPRequestParserTests.read(text, piece: piece)
            #expect(refusal == nil, "pieces of \(piece)")
            #expect(requests.map(\.method) == ["POST", "GET", "POST", "GET"], "pieces of \(piece)")
            #expect(requests.map(\.target) == ["/rpc", "/openrpc.json", "/rpc", "/"])
            #expect(requests.first?.body == Array("{\"method\":\"x\"}".utf8))
            #expect(requests.first?.header("content-type") == "application/json")
            #expect(requests.dropFirst(2).first?.body == Array("abcde".utf8))
            // HTTP/1.1 keeps the connection by default; HTTP/1.0 does not.
            #expect(requests.map(\.keepAlive) == [true, true, true, false])
        }
    }

    /// Request smuggling and header tricks, each refused with its status.
    @Test func smugglingAndHeaderTricksAreRefused() {
        let refused: [(String, String, Int)] = [
            ("a length and chunked", "POST / HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
            ("two lengths", "POST / HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde", 400),
            ("an encoding not ending in chunked", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 501),
            ("an encoding besides chunked", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501),
            ("chunked on HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
            ("a version after 1.1", "GET / HTTP/1.2\r\n\r\n", 505),
            ("white space before a colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),
            ("a tab before a colon", "GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", 400),
            ("a folded header", "GET / HTTP/1.1\r\nX-A: 1\r\n  folded\r\n\r\n", 400),
            ("a bare LF", "GET / HTTP/1.1\nHost: a\n\n", 400),
            ("a bare LF inside the headers", "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", 400),
            ("a header with no colon", "GET / HTTP/1.1\r\nHost\r\n\r\n", 400),
            ("a head that starts with a bare LF", "\nGET / HTTP/1.1\r\n\r\n", 400),
            ("not HTTP", "HELLO\r\n\r\n", 400),
        ]
        for (name, text, status) in refused {
            for piece in [Int.max, 1] {
                let (requests, refusal) = HTTPRequestParserTests.read(text, piece: piece)
                #expect(requests.isEmpty && refusal?.status == status, "\(name), pieces of \(piece): \(String(describing: refusal))")
            }
        }
        // An empty line before a request is ignored (RFC 9112 §2.2), between pipelined ones too.
        for piece in [Int.max, 1] {
            let (requests, refusal) = HTTPRequestParserTests.read("\r\n\r\nGET /a HTTP/1.1\r\n\r\n\r\nGET /b HTTP/1.1\r\n\r\n", piece: piece)
            #expect(refusal == nil && requests.map(\.target) == ["/a", "/b"], "pieces of \(piece)")
        }
        // What follows a refusal is never read, even a good request.
        let (requests, refusal) = HTTPRequestParserTests.read("GET / HTTP/1.1\r\nHost : a\r\n\r\nGET / HTTP/1.1\r\n\r\n")
        #expect(requests.isEmpty && refusal?.status == 400)
    }

    /// Floods: of headers, of one endless head (slowloris), of a body's length, of chunk sizes.
    @Test func floodsAreRefusedAtTheirBounds() {
        var limits = HTTPRequestParser.Limits()
        limits.maxHeaders = 100
        limits.maxHeadBytes = 16 << 10
        limits.maxBodyBytes = 1 << 10
        let headers = { (count: Int) in (0..<count).map { "X-\($0): v\r\n" }.joined() }
        #expect(HTTPRequestParserTests.read("GET / HTTP/1.1\r\n" + headers(100) + "\r\n", limits: limits).0.count == 1)
        #expect(HTTPRequestParserTests.read("GET / HTTP/1.1\r\n" + headers(101) + "\r\n", limits: limits).1?.status == 431)
        // A head that never ends is refused once it passes the bound, not kept.
        let endless = "GET / HTTP/1.1\r\nX-Long: " + String(repeating: "a", count: 20_000)
        #expect(HTTPRequestParserTests.read(endless, piece: 512, limits: limits).1?.status == 431)
        let body = { (n: Int) in "POST / HTTP/1.1\r\nContent-Length: \(n)\r\n\r\n" + String(repeating: "b", count: n) }
        #expect(HTTPRequestParserTests.read(body(1 << 10), limits: limits).0.first?.body.count == 1 << 10)
        #expect(HTTPRequestParserTests.read(body((1 << 10) + 1), limits: limits).1?.status == 413)
        // A chunk size past the bound is refused at its header, before any of it arrives.
        #expect(HTTPRequestParserTests.read("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFF\r\n", limits: limits).1?.status == 413)
        // Chunks within the bound each, past it together.
        let chunk = String(repeating: "c", count: 600)
        let two = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n"
        #expect(HTTPRequestParserTests.read(two, piece: 100, limits: limits).1?.status == 413)
    }

    /// What the library reads leniently, refused: an empty value's name run into the next
    /// header's, trailers (which it would give to the next request), loose chunk framing (any
    /// two bytes for the CRLF after a chunk), a CONNECT's body (read as the next request), white
    /// space inside a name, and versions other than HTTP/1.
    @Test func lenientReadingsAreRefusedOrMended() {
        // "Authoriz:" and "ation: x" are two headers, never one "Authorization".
        let (empty, none) = HTTPRequestParserTests.read("GET / HTTP/1.1\r\nAuthoriz:\r\nation: Bearer x\r\nX:\r\n\r\n")
        #expect(none == nil)
        #expect(empty.first?.headers.map(\.name) == ["Authoriz", "ation", "X"])
        #expect(empty.first?.headers.map(\.value) == ["", "Bearer x", ""])
        #expect(empty.first?.header("authorization") == nil)
        let refused: [(String, String, Int)] = [
            ("a trailer", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Admin: 1\r\n\r\nGET / HTTP/1.1\r\n\r\n", 400),
            ("an empty trailer", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Admin:\r\n\r\nGET / HTTP/1.1\r\n\r\n", 400),
            ("no CRLF after a chunk", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n", 400),
            ("a bare CR after a size", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\rXabc\r\n0\r\n\r\n", 400),
            ("a bare LF in an extension", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;a\nb\r\nabc\r\n0\r\n\r\n", 400),
            ("a bare LF after the last chunk", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\n", 400),
            ("an endless extension", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1;" + String(repeating: "e", count: 2000), 400),
            ("a CONNECT with a body", "CONNECT a:443 HTTP/1.1\r\nContent-Length: 24\r\n\r\nGET /admin HTTP/1.1\r\n\r\n", 501),
            ("white space in a name", "GET / HTTP/1.1\r\nHo st: a\r\n\r\n", 400),
            // The library checks every byte of a value but its first.
            ("a NUL opening a value", "GET / HTTP/1.1\r\nConnection: \u{0}keep-alive\r\n\r\n", 400),
            ("a control opening a value", "GET / HTTP/1.1\r\nX: \u{1}\r\n\r\n", 400),
            ("a DEL opening a value", "GET / HTTP/1.1\r\nX: \u{7F}a\r\n\r\n", 400),
            ("HTTP/0.9", "GET /\r\n\r\n", 505),
            ("HTTP/2.0", "GET / HTTP/2.0\r\n\r\n", 505),
            ("HTTP/9.9", "GET / HTTP/9.9\r\n\r\n", 505),
        ]
        for (name, text, status) in refused {
            for piece in [Int.max, 1, 5] {
                let (requests, refusal) = HTTPRequestParserTests.read(text, piece: piece)
                #expect(requests.isEmpty && refusal?.status == status, "\(name), pieces of \(piece): \(String(describing: refusal))")
            }
        }
        // Extensions and hex in either case still read; an upgrade is ignored and the stream read on.
        let good =
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;name=v\r\nabc\r\nA \r\n0123456789\r\n0\r\n\r\n"
            + "GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nGET /x HTTP/1.1\r\n\r\n"
        for piece in [Int.max, 1, 3] {
            let (requests, refusal) = HTTPRequestParserTests.read(good, piece: piece)
            #expect(refusal == nil)
            #expect(requests.map(\.target) == ["/", "/", "/x"])
            #expect(requests.first?.body == Array("abc0123456789".utf8))
        }
    }

    /// Mutated requests (bytes flipped, CR, LF, space, tab, colon, NUL or obs-text put in, header
    /// lines doubled, ends cut), each fed whole and in random pieces: the reads agree, nothing
    /// is returned after a refusal, bodies and heads keep their bounds, `consumed` never passes
    /// what was given, and a first head with a bare LF, a folded line or white space in a name
    /// yields no request.
    @Test func mutatedRequestsKeepTheInvariants() {
        var limits = HTTPRequestParser.Limits()
        limits.maxHeadBytes = 400
        limits.maxHeaders = 6
        limits.maxBodyBytes = 48
        let seeds = [
            "GET /openrpc.json?x=1 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\nX-A: 1\r\n\r\n",
            "POST /rpc HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"method\":\"x\"}",
            "POST /rpc HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;e=1\r\nde\r\n0\r\n\r\n",
            "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabcGET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        ].map { Array($0.utf8) }
        let inserted: [UInt8] = [13, 10, 32, 9, 58, 0, 0x80, 0xFF, 59, 48]
        var random = SplitMix64(seed: 0x5EED_0031)
        let started = ContinuousClock.now
        var cases = 0
        var refusals = 0
        while cases < 3000 && ContinuousClock.now - started < .seconds(20) {
            cases += 1
            var bytes = seeds[random.below(seeds.count)]
            for _ in 0...random.below(3) {
                let at = random.below(bytes.count)
                switch random.below(6) {
                case 0: bytes[at] = UInt8(random.below(256))
                case 1: bytes.insert(inserted[random.below(inserted.count)], at: at)
                case 2: bytes.remove(at: at)
                case 3:
                    // A header line, doubled: from one CRLF to the next.
                    let ends = bytes.indices.dropLast().filter { bytes[$0] == 13 && bytes[$0 + 1] == 10 }
                    if ends.count >= 2 {
                        let first = random.below(ends.count - 1)
                        bytes.insert(contentsOf: bytes[(ends[first] + 2)..<(ends[first + 1] + 2)], at: ends[first] + 2)
                    }
                case 4: bytes.removeLast(random.below(bytes.count))
                default: bytes.insert(contentsOf: bytes, at: bytes.count)
                }
                if bytes.isEmpty { bytes = seeds[0] }
            }
            let whole = HTTPRequestParserTests.feed(bytes, pieces: { _ in .max }, limits: limits)
            let split = HTTPRequestParserTests.feed(bytes, pieces: { _ in 1 + random.below(random.below(2) == 0 ? 4 : 64) }, limits: limits)
            #expect(whole.requests == split.requests && whole.refusal == split.refusal, "\(bytes)")
            if whole.refusal != nil { refusals += 1 }
            for request in whole.requests + split.requests {
                #expect(request.body.count <= limits.maxBodyBytes)
                #expect(request.headers.count <= limits.maxHeaders && request.target.utf8.count <= limits.maxHeadBytes)
                #expect(request.headers.allSatisfy { !$0.name.utf8.contains { [0, 9, 10, 13, 32, 58].contains($0) } }, "\(bytes)")
                #expect(request.headers.allSatisfy { !$0.value.utf8.contains { [0, 10, 13].contains($0) } }, "\(bytes)")
            }
            // The first head, read by the rules the parser is held to.
            let head = bytes.split(separator: 10, omittingEmptySubsequences: false)
            var broken = false
            for (index, line) in head.enumerated() {
                if index == head.count - 1 { break }
                if line.last != 13 {
                    broken = true
                    break
                }
                let text = line.dropLast()
                if text.isEmpty { break }
                if index > 0, text.first == 32 || text.first == 9 || text.prefix(while: { $0 != 58 }).contains(where: { $0 == 32 || $0 == 9 }) {
                    broken = true
                    break
                }
            }
            if broken { #expect(whole.requests.isEmpty && split.requests.isEmpty, "\(bytes)") }
        }
        #expect(cases == 3000)
        // The mutations refuse often but not always: both paths are exercised.
        #expect(refusals > 300 && refusals < cases - 300, "\(refusals) refusals in \(cases)")
    }

    /// Feeds `bytes` in pieces `pieces` picks, as the `read` helper does, checking each read's
    /// `consumed` and what it keeps; after a refusal, reads once more to see nothing come out.
    static func feed(_ bytes: [UInt8], pieces: (Int) -> Int, limits: HTTPRequestParser.Limits) -> (requests: [HTTPRequestParser.Request], refusal: Refusal?) {
        let parser = HTTPRequestParser(limits: limits)
        var buffered: [UInt8] = []
        var requests: [HTTPRequestParser.Request] = []
        var at = 0
        var reads = 0
        while at < bytes.count {
            reads += 1
            let end = at + min(bytes.count - at, pieces(at))
            buffered += bytes[at..<end]
            at = end
            let read = parser.read(buffered[...])
            #expect(read.consumed >= 0 && read.consumed <= buffered.count)
            requests += read.requests
            buffered.removeFirst(min(max(read.consumed, 0), buffered.count))
            if let refusal = read.refusal {
                let again = parser.read((buffered + Array("GET / HTTP/1.1\r\n\r\n".utf8))[...])
                #expect(again.requests.isEmpty && again.refusal == refusal)
                return (requests, refusal)
            }
            // What is kept is a head's start, never more than a head.
            #expect(buffered.count <= limits.maxHeadBytes)
        }
        #expect(reads <= bytes.count)
        return (requests, nil)
    }
}

extension SplitMix64 {
    /// A number in 0..<bound (bound > 0).
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

extension HTTPRequestParserTests {
    /// A head that arrives in pieces is checked once: each look goes on from where the last
    /// stopped (a head sent a byte at a time must not cost its length squared), and ends as
    /// a look at the whole head does.
    @Test func aHeadInPiecesIsCheckedOnce() {
        let text = Array("GET / HTTP/1.1\r\nHost: a\r\nX-B: c\r\n\r\n".utf8)
        var scan = HTTPRequestParser.HeadScan()
        for end in 1..<text.count {
            #expect(HTTPRequestParser.head(text[..<end], limits: .init(), scan: &scan) == .incomplete)
            #expect(scan.checked == end)
        }
        var whole = HTTPRequestParser.HeadScan()
        #expect(HTTPRequestParser.head(text[...], limits: .init(), scan: &scan) == .checked(text.count))
        #expect(HTTPRequestParser.head(text[...], limits: .init(), scan: &whole) == .checked(text.count))
    }
}
