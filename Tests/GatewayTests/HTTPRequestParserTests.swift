@testable import Gateway
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
            ("an encoding not ending in chunked", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400),
            ("white space before a colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),
            ("a tab before a colon", "GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", 400),
            ("a folded header", "GET / HTTP/1.1\r\nX-A: 1\r\n  folded\r\n\r\n", 400),
            ("a bare LF", "GET / HTTP/1.1\nHost: a\n\n", 400),
            ("a bare LF inside the headers", "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", 400),
            ("a header with no colon", "GET / HTTP/1.1\r\nHost\r\n\r\n", 400),
            ("a head that starts empty", "\r\nGET / HTTP/1.1\r\n\r\n", 400),
            ("not HTTP", "HELLO\r\n\r\n", 400),
        ]
        for (name, text, status) in refused {
            for piece in [Int.max, 1] {
                let (requests, refusal) = HTTPRequestParserTests.read(text, piece: piece)
                #expect(requests.isEmpty && refusal?.status == status, "\(name), pieces of \(piece): \(String(describing: refusal))")
            }
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
}
