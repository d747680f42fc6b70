import CHttpParser

/// HTTP/1.1 requests read from a byte stream by Node.js's former parser (libhttp-parser), the
/// one owner of its `http_parser` handle, with the bounds the parser does not keep itself.
///
/// libhttp-parser refuses `Content-Length` with `Transfer-Encoding`, two lengths, and a
/// `Transfer-Encoding` that does not end in `chunked`. It accepts what this type refuses
/// before a request's head reaches it: a bare LF as a line end, a header line folded onto the
/// one before, white space before a header's colon, more than `maxHeaders` headers, and a head
/// over `maxHeadBytes` (the parser's own bound is one setting for the whole process). Its
/// callbacks refuse a body past `maxBodyBytes`, a version other than HTTP/1, and CONNECT (the
/// parser would read a CONNECT's body as the next request).
///
/// Debian builds the library without its strict checks: it takes any byte for the LF after a
/// chunk's size and any two bytes for the CRLF after its data, and reads a bare LF inside a
/// chunk extension. So the parser is given a head alone, and a chunked body only once
/// `ChunkedFraming` has checked it (which also refuses trailers, and a chunk whose size passes
/// what is left of `maxBodyBytes`, at its size line).
final class HTTPRequestParser {
    struct Limits {
        /// The request line and headers, with their line ends.
        var maxHeadBytes = 16 << 10
        var maxHeaders = 100
        var maxBodyBytes = 1 << 20
    }

    /// One request, read whole.
    struct Request: Equatable {
        var method: String
        var target: String
        /// Names as sent (compare them case-insensitively: `header(_:)`), in order.
        var headers: [(name: String, value: String)]
        var body: [UInt8]
        var keepAlive: Bool
        /// The minor version: HTTP/1.0 or HTTP/1.1.
        var minor = 1

        /// The first value of header `name`, matched case-insensitively.
        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        static func == (a: Request, b: Request) -> Bool {
            a.method == b.method && a.target == b.target && a.body == b.body && a.keepAlive == b.keepAlive
                && a.headers.map { $0.name } == b.headers.map { $0.name } && a.headers.map { $0.value } == b.headers.map { $0.value }
        }
    }

    /// Why the stream cannot be read on: the status to answer before closing.
    struct Refusal: Error, Equatable {
        var status: Int
        var reason: String
    }

    let limits: Limits
    private var parser = http_parser()
    private var settings = http_parser_settings()
    /// The request being read, once its head passed the checks.
    private var current: Request?
    private var field: [UInt8] = []
    private var value: [UInt8] = []
    /// Whether the parser gave a value (maybe empty) since the last name.
    private var inValue = false
    /// The framing of the chunked body being read, checked ahead of the parser.
    private var chunks: ChunkedFraming?
    private var url: [UInt8] = []
    private var complete: [Request] = []
    private var refusal: Refusal?
    /// Whether the parser is inside a message (its head checked and given).
    private var inMessage = false
    /// How far the head being received was checked.
    private var headScan = HeadScan()
    /// A head read since the last `read` returned asked for `100 Continue`.
    private var continueRequested = false

    init(limits: Limits = Limits()) {
        self.limits = limits
        http_parser_init(&parser, HTTP_REQUEST)
        http_parser_settings_init(&settings)
        settings.on_url = { parser, at, length in HTTPRequestParser.of(parser).url.append(at, length) }
        settings.on_header_field = { parser, at, length in
            let this = HTTPRequestParser.of(parser)
            // An empty value is a call with no bytes: the name after it is a new header's.
            if this.inValue { this.endHeader() }
            return this.field.append(at, length)
        }
        settings.on_header_value = { parser, at, length in
            let this = HTTPRequestParser.of(parser)
            this.inValue = true
            return this.value.append(at, length)
        }
        settings.on_headers_complete = { parser in
            guard let parser else { return -1 }
            let this = HTTPRequestParser.of(parser)
            if this.inValue { this.endHeader() }
            guard parser.pointee.http_major == 1, parser.pointee.http_minor <= 1 else {
                this.refusal = Refusal(status: 505, reason: "HTTP/1.1 and HTTP/1.0 only")
                return -1
            }
            this.current?.minor = Int(parser.pointee.http_minor)
            if let refused = this.current.flatMap(HTTPRequestParser.checkFraming) {
                this.refusal = refused
                return -1
            }
            guard http_method(rawValue: parser.pointee.method) != HTTP_CONNECT else {
                this.refusal = Refusal(status: 501, reason: "CONNECT is not served")
                return -1
            }
            let method = String(cString: http_method_str(http_method(rawValue: parser.pointee.method)))
            this.current?.method = method
            this.current?.target = String(decoding: this.url, as: UTF8.self)
            // ULLONG_MAX: no Content-Length given.
            if parser.pointee.content_length != UInt64.max, parser.pointee.content_length > UInt64(this.limits.maxBodyBytes) {
                this.refusal = Refusal(status: 413, reason: "a body is at most \(this.limits.maxBodyBytes) bytes")
                return -1
            }
            let chunked = parser.pointee.flags & F_CHUNKED.rawValue != 0
            if chunked { this.chunks = ChunkedFraming(maxBodyBytes: this.limits.maxBodyBytes) }
            // HTTP/1.1's `Expect: 100-continue`, for a body that is to come.
            let bodyComing = chunked || (parser.pointee.content_length != UInt64.max && parser.pointee.content_length > 0)
            if bodyComing, parser.pointee.http_minor >= 1, this.current?.header("Expect")?.lowercased() == "100-continue" { this.continueRequested = true }
            return 0
        }
        settings.on_body = { parser, at, length in
            let this = HTTPRequestParser.of(parser)
            guard (this.current?.body.count ?? 0) + length <= this.limits.maxBodyBytes else {
                this.refusal = Refusal(status: 413, reason: "a body is at most \(this.limits.maxBodyBytes) bytes")
                return -1
            }
            if let at { at.withMemoryRebound(to: UInt8.self, capacity: length) { this.current?.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length)) } }
            return 0
        }
        settings.on_message_complete = { parser in
            guard let parser else { return -1 }
            let this = HTTPRequestParser.of(parser)
            if var request = this.current {
                request.keepAlive = http_should_keep_alive(parser) != 0
                this.complete.append(request)
            }
            this.current = nil
            this.chunks = nil
            this.inMessage = false
            // Stop after each request: the next one's head is checked before the parser sees it.
            http_parser_pause(parser, 1)
            return 0
        }
    }

    /// What the parser leaves to its caller in a head's framing (RFC 9112 §6.1):
    /// `Transfer-Encoding` only on HTTP/1.1, and then only `chunked`.
    static func checkFraming(_ request: Request) -> Refusal? {
        let codings = request.headers.filter { $0.name.lowercased() == "transfer-encoding" }
            .flatMap { $0.value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() } }
        guard !codings.isEmpty else { return nil }
        guard request.minor >= 1 else { return Refusal(status: 400, reason: "HTTP/1.0 has no Transfer-Encoding") }
        guard codings == ["chunked"] else { return Refusal(status: 501, reason: "the only transfer coding taken is chunked") }
        return nil
    }

    /// What a server must refuse of a request's `Host` (RFC 9112 §3.2): none on HTTP/1.1, more
    /// than one, or one that is not a name or an address with a port.
    static func checkHost(_ request: Request) -> Refusal? {
        let hosts = request.headers.filter { $0.name.lowercased() == "host" }.map(\.value)
        guard hosts.count <= 1 else { return Refusal(status: 400, reason: "a request names one Host") }
        if request.minor >= 1 && hosts.isEmpty { return Refusal(status: 400, reason: "an HTTP/1.1 request names its Host") }
        if let host = hosts.first, host.isEmpty || !host.utf8.allSatisfy({ hostBytes.contains($0) }) {
            return Refusal(status: 400, reason: "Host is a name or an address, with a port")
        }
        return nil
    }

    /// The bytes of a `Host`: a name, an IPv4 address or a bracketed IPv6 one, and a port.
    private static let hostBytes = Set(Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]".utf8))

    /// The head of the request whose body is being read, if one is.
    var headInProgress: Request? { inMessage ? current : nil }

    private static func of(_ parser: UnsafeMutablePointer<http_parser>?) -> HTTPRequestParser {
        // `data` is set to this object for each `execute`, which runs on its caller's stack.
        Unmanaged<HTTPRequestParser>.fromOpaque(parser!.pointee.data).takeUnretainedValue()
    }

    private func endHeader() {
        current?.headers.append((String(decoding: field, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        field.removeAll(keepingCapacity: true)
        value.removeAll(keepingCapacity: true)
        inValue = false
    }

    /// What one `read` found.
    struct Parsed {
        /// The requests completed, in order.
        var requests: [Request]
        /// Input bytes used (a body is used as it arrives).
        var consumed: Int
        /// Set once the stream cannot be read on: nothing after it is read.
        var refusal: Refusal?
        /// A request's head asked for `100 Continue` before its body is sent (`Expect: 100-continue`).
        var continueRequested: Bool
    }

    /// Whether a request's head was read and its body is still coming.
    var midRequest: Bool { inMessage }

    /// Reads what it can of `input`, at most `maxRequests` requests.
    func read(_ input: ArraySlice<UInt8>, maxRequests: Int = .max) -> Parsed {
        var position = input.startIndex
        while refusal == nil && position < input.endIndex && complete.count < maxRequests {
            var end = input.endIndex
            if !inMessage {
                // An empty line before a request is ignored (RFC 9112 §2.2).
                if headScan.checked == 0, input[position...].starts(with: [0x0D, 0x0A]) {
                    position += 2
                    continue
                }
                if headScan.checked == 0, input.endIndex - position == 1, input[position] == 0x0D { break }
                let head = HTTPRequestParser.head(input[position...], limits: limits, scan: &headScan)
                if head != .incomplete { headScan = HeadScan() }
                switch head {
                case .incomplete: return finish(consumed: position - input.startIndex)
                case .refused(let refused):
                    refusal = refused
                    return finish(consumed: position - input.startIndex)
                case .checked(let length):
                    inMessage = true
                    current = Request(method: "", target: "", headers: [], body: [], keepAlive: false)
                    url.removeAll(keepingCapacity: true)
                    field.removeAll(keepingCapacity: true)
                    value.removeAll(keepingCapacity: true)
                    inValue = false
                    chunks = nil
                    // The head alone: whether a chunked body follows is known after it.
                    end = position + length
                }
            } else if let refused = chunks?.check(input[position...]) {
                refusal = refused
                break
            }
            let used = execute(input[position..<end])
            position += used
            let errno = http_errno(rawValue: parser.http_errno)
            if errno == HPE_PAUSED {
                http_parser_pause(&parser, 0)
            } else if errno != HPE_OK {
                refusal = refusal ?? Refusal(status: 400, reason: String(cString: http_errno_description(errno)))
            } else if used == 0 {
                break
            }
        }
        return finish(consumed: position - input.startIndex)
    }

    private func finish(consumed: Int) -> Parsed {
        defer {
            complete = []
            continueRequested = false
        }
        return Parsed(requests: complete, consumed: consumed, refusal: refusal, continueRequested: continueRequested)
    }

    private func execute(_ bytes: ArraySlice<UInt8>) -> Int {
        parser.data = Unmanaged.passUnretained(self).toOpaque()
        return bytes.withUnsafeBytes { raw in
            http_parser_execute(&parser, &settings, raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count)
        }
    }

    /// How far the head being received was checked: bytes, lines, and where the last line
    /// starts, from the head's start.
    struct HeadScan {
        var checked = 0
        var lines = 0
        var lineStart = 0
    }

    /// What a request's head (its request line and header lines, to the empty line) holds.
    enum Head: Equatable {
        case incomplete
        /// The head's length, to its empty line's LF.
        case checked(Int)
        case refused(Refusal)
    }

    /// Checks the head at the front of `input` before the parser reads it: within
    /// `maxHeadBytes` and `maxHeaders`, every line ending in CRLF, no control characters but
    /// tabs, no line folded onto the one before, no white space in a header's name or before
    /// its colon.
    ///
    /// `scan` is how far earlier calls checked the same head (which the caller hands back
    /// from its start, longer each time): it goes on from there, so a head sent a byte at a
    /// time is checked once, not once per byte.
    static func head(_ input: ArraySlice<UInt8>, limits: Limits, scan: inout HeadScan) -> Head {
        let cr = UInt8(ascii: "\r")
        let lf = UInt8(ascii: "\n")
        var lineStart = input.startIndex + scan.lineStart
        var lines = scan.lines
        var at = input.startIndex + scan.checked
        defer { scan = HeadScan(checked: at - input.startIndex, lines: lines, lineStart: lineStart - input.startIndex) }
        while at < input.endIndex {
            guard at - input.startIndex < limits.maxHeadBytes else {
                return .refused(Refusal(status: 431, reason: "a request's line and headers are at most \(limits.maxHeadBytes) bytes"))
            }
            // The library does not check a value's first byte: NUL and the other controls are refused here.
            if input[at] < 0x20 && input[at] != cr && input[at] != lf && input[at] != UInt8(ascii: "\t") || input[at] == 0x7F {
                return .refused(Refusal(status: 400, reason: "no control characters in a request's head"))
            }
            if input[at] == lf {
                guard at > lineStart, input[at - 1] == cr else { return .refused(Refusal(status: 400, reason: "lines end in CRLF")) }
                if at - 1 == lineStart {
                    return lines == 0 ? .refused(Refusal(status: 400, reason: "a request starts with its request line")) : .checked(at + 1 - input.startIndex)
                }
                if lines > 0 {
                    let line = input[lineStart..<(at - 1)]
                    if line.first == UInt8(ascii: " ") || line.first == UInt8(ascii: "\t") {
                        return .refused(Refusal(status: 400, reason: "a header line is not folded onto the one before"))
                    }
                    guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex else {
                        return .refused(Refusal(status: 400, reason: "a header is a name, a colon and a value"))
                    }
                    if line[..<colon].contains(where: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }) {
                        return .refused(Refusal(status: 400, reason: "no white space before a header's colon"))
                    }
                    guard lines <= limits.maxHeaders else { return .refused(Refusal(status: 431, reason: "at most \(limits.maxHeaders) headers")) }
                }
                lines += 1
                lineStart = at + 1
            }
            at += 1
        }
        return .incomplete
    }
}

/// The framing of a chunked body, checked before the parser reads it: each size line is hex
/// digits, maybe an extension after `;` or a space, and CRLF; each chunk's data is followed by
/// CRLF; the last chunk (size 0) by CRLF at once, with no trailers.
struct ChunkedFraming {
    enum State: Equatable {
        /// In a size line: its size so far, and whether its extension started.
        case size(Int, extended: Bool)
        case sizeLF(Int)
        case data(Int)
        case dataCR
        case dataLF
        case lastCR
        case lastLF
        case done
    }

    let maxBodyBytes: Int
    var state = State.size(0, extended: false)
    /// The data of the chunks so far, and the bytes of the size line being read.
    var taken = 0
    var lineBytes = 0

    init(maxBodyBytes: Int) {
        self.maxBodyBytes = maxBodyBytes
    }

    /// Checks `input` to the body's end (where it stops) or the input's; nil while it is well framed.
    mutating func check(_ input: ArraySlice<UInt8>) -> HTTPRequestParser.Refusal? {
        let bad = HTTPRequestParser.Refusal(status: 400, reason: "a chunked body's lines end in CRLF")
        var at = input.startIndex
        while at < input.endIndex && state != .done {
            let byte = input[at]
            switch state {
            case .size(let size, let extended):
                lineBytes += 1
                // An endless extension would use no memory but keep the request open: a flood.
                guard lineBytes <= 1 << 10 else { return HTTPRequestParser.Refusal(status: 400, reason: "a chunk's size line is at most 1024 bytes") }
                if byte == UInt8(ascii: "\r") {
                    guard lineBytes > 1 else { return bad }
                    state = .sizeLF(size)
                } else if byte == UInt8(ascii: "\n") {
                    return bad
                } else if extended {
                    break
                } else if let digit = Character(Unicode.Scalar(byte)).hexDigitValue {
                    let grown = size * 16 + digit
                    guard grown <= maxBodyBytes - taken else {
                        return HTTPRequestParser.Refusal(status: 413, reason: "a body is at most \(maxBodyBytes) bytes")
                    }
                    state = .size(grown, extended: false)
                } else if (byte == UInt8(ascii: ";") || byte == UInt8(ascii: " ")) && lineBytes > 1 {
                    state = .size(size, extended: true)
                } else {
                    return HTTPRequestParser.Refusal(status: 400, reason: "a chunk's size is hex digits")
                }
            case .sizeLF(let size):
                guard byte == UInt8(ascii: "\n") else { return bad }
                lineBytes = 0
                taken += size
                state = size == 0 ? .lastCR : .data(size)
            case .data(let left):
                let step = min(left, input.endIndex - at)
                state = left - step == 0 ? .dataCR : .data(left - step)
                at += step
                continue
            case .dataCR, .lastCR:
                guard byte == UInt8(ascii: "\r") else {
                    return state == .lastCR ? HTTPRequestParser.Refusal(status: 400, reason: "a chunked body has no trailers") : bad
                }
                state = state == .lastCR ? .lastLF : .dataLF
            case .dataLF, .lastLF:
                guard byte == UInt8(ascii: "\n") else { return bad }
                state = state == .lastLF ? .done : .size(0, extended: false)
            case .done:
                break
            }
            at += 1
        }
        return nil
    }
}

extension Array where Element == UInt8 {
    /// Appends `length` bytes at `at` (a parser callback's span); 0, as the parser's callbacks answer to go on.
    fileprivate mutating func append(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        guard let at else { return 0 }
        at.withMemoryRebound(to: UInt8.self, capacity: length) { append(contentsOf: UnsafeBufferPointer(start: $0, count: length)) }
        return 0
    }
}
