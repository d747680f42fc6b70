import Bus
import Contracts
import Foundation
import KeyFiles

/// HTTP/1.1 on a connection, as a state machine over bytes: requests in (read by
/// `HTTPRequestParser`), calls out; outcomes in, responses out, in the order of the requests
/// (pipelining), each released once it and every one before it are done.
///
/// - `POST /rpc`: a JSON-RPC 2.0 request or batch in the body, read and answered as one line
///   of the line protocol (the same checks, limits and batch rules), in a `200` with the
///   response or batch; `204` when it held notifications only. The caller is the token in
///   `Authorization: Bearer …`, or in the params, for that one request: a connection is
///   never signed in (a proxy carries many clients' requests on one connection), so a sign-in
///   answers its token and signs nothing in, and subscriptions, which need one, are refused.
/// - `GET /rpc` with `Upgrade: websocket`: the handshake; `WebSocketFraming` reads what follows.
/// - `GET` of a resource (`HTTPRoute`: the OpenRPC document, tiles, photos): a method's result
///   as the body, with its tag; the web app's files (`WebFiles`) with the app's CSP.
/// - Pages of other sites are refused unless allowed (`WebOrigin`), and allowed ones get CORS
///   headers and preflights.
/// - Anything else: `404`, or `405` with `Allow` for a known path.
/// - A request the parser refuses (malformed, too large, smuggling) is answered with its
///   status, and the connection closes; so does one that asks to (`Connection: close`, HTTP/1.0).
/// - Pushes are not sent over plain HTTP.
final class HTTPFraming: Framing {
    let limits: FramingLimits
    private let parser: HTTPRequestParser
    /// Reads each `POST /rpc` body as one line: JSON-RPC's checks and batches, in one place.
    private let rpc: JSONRPCFraming

    /// What a response is made of once its calls are answered.
    private enum Kind {
        /// A JSON-RPC body: the line protocol's reply line, collected from `rpc`.
        case rpc(reply: [UInt8])
        /// A resource: a call's result is the body itself.
        case resource
    }

    /// A response not complete yet.
    private struct Exchange {
        var kind = Kind.resource
        /// Calls not answered yet.
        var waiting = 0
        /// The answer to HEAD: headers only.
        var head: Bool
        var close: Bool
        /// Headers every response to the request carries (CORS).
        var headers: [(String, String)] = []
        /// A resource's route, and the request's `If-None-Match`.
        var resource: (route: HTTPRoute, ifNoneMatch: String?)?
    }

    /// Requests are numbered as read; responses go out in that order.
    private var nextExchange = 0
    private var nextToWrite = 0
    private var exchanges: [Int: Exchange] = [:]
    /// Responses complete but behind one that is not.
    private var ready: [Int: [UInt8]] = [:]
    private(set) var heldBytes = 0
    /// Each call's exchange, and its slot in `rpc` for a JSON-RPC call.
    private var calls: [Int: (exchange: Int, rpcSlot: Int?)] = [:]
    private var nextSlot = 0
    /// A request read whole whose batch waits for room to be read.
    private var waitingRequest: (request: HTTPRequestParser.Request, exchange: Int)?
    /// No request is read after one that closes the connection.
    private var ended = false

    init(limits: FramingLimits) {
        self.limits = limits
        parser = HTTPRequestParser(limits: .init(maxBodyBytes: limits.maxRequestBytes))
        rpc = JSONRPCFraming(limits: limits)
    }

    var outstanding: Int { calls.count }

    /// A connection speaking HTTP carries the token with each request.
    var signsIn: Bool { false }

    func read(_ input: ArraySlice<UInt8>, atEnd: Bool, room: Int, bytes: Int) -> Reading {
        var reading = Reading()
        var position = input.startIndex
        var room = room
        while !ended {
            guard heldBytes + reading.output.count < bytes else {
                reading.waiting = true
                break
            }
            if waitingRequest == nil {
                guard room > 0 else {
                    reading.waiting = position < input.endIndex
                    break
                }
                let parsed = parser.read(input[position...], maxRequests: 1)
                position += parsed.consumed
                // Only when nothing is owed before it (an interim response goes between whole
                // ones), and only for a body that will be read: one answered by an error at once
                // would be sent for nothing.
                if parsed.continueRequested, exchanges.isEmpty, ready.isEmpty, let head = parser.headInProgress, wantsBody(head) {
                    reading.output += Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
                }
                if let refusal = parsed.refusal {
                    let error = ServiceError(refusal.status == 413 ? .tooLarge : .invalidArgument, refusal.reason)
                    reading.output += complete(newExchange(head: false, close: true), .error(refusal.status, error))
                    reading.close = true
                    ended = true
                    break
                }
                guard let request = parsed.requests.first else { break }
                reading.requests += 1
                if let refusal = HTTPRequestParser.checkHost(request) {
                    reading.output += complete(newExchange(head: false, close: true), .error(refusal.status, ServiceError(.invalidArgument, refusal.reason, field: "Host")))
                    reading.close = true
                    ended = true
                    break
                }
                waitingRequest = (request, newExchange(head: request.method == "HEAD", close: !request.keepAlive))
            }
            if let (request, _) = waitingRequest {
                // Another client's request (a proxy's pipeline) waits for the next pass, so that
                // each is counted under its own client.
                let forwardedFor = HTTPFraming.forwardedFor(request)
                if let earlier = reading.forwardedFor, earlier != forwardedFor {
                    reading.waiting = true
                    break
                }
                reading.forwardedFor = forwardedFor
            }
            guard let (request, exchange) = waitingRequest, let used = route(request, exchange, room: room, into: &reading) else {
                reading.waiting = true
                break
            }
            waitingRequest = nil
            room -= used
            if !request.keepAlive {
                reading.close = true
                ended = true
            }
        }
        reading.consumed = position - input.startIndex
        reading.partial = parser.midRequest || waitingRequest != nil
        return reading
    }

    private func newExchange(head: Bool, close: Bool) -> Int {
        defer { nextExchange += 1 }
        exchanges[nextExchange] = Exchange(head: head, close: close)
        return nextExchange
    }

    /// Headers a preflight allows a page to send.
    static let allowedHeaders = "Authorization, Content-Type"
    /// How long a browser may keep a preflight's answer, in seconds.
    static let preflightMaxAge = 600

    /// The path of a request's target: its origin form (`/rpc?x`), or the absolute form a client
    /// may send (`http://host/rpc`), without the query.
    static func path(of target: String) -> Substring {
        var rest = target[...]
        if target.first == "/" { return rest.prefix { $0 != "?" } }
        if let scheme = ["http://", "https://"].first(where: { target.lowercased().hasPrefix($0) }) {
            rest = rest.dropFirst(scheme.count).drop { $0 != "/" && $0 != "?" }
            if rest.isEmpty || rest.first == "?" { return "/" }
        }
        return rest.prefix { $0 != "?" }
    }

    /// A request's `X-Forwarded-For`, every one of them in order ("" for none).
    static func forwardedFor(_ request: HTTPRequestParser.Request) -> String {
        request.headers.filter { $0.name.lowercased() == "x-forwarded-for" }.map(\.value).joined(separator: ",")
    }

    /// Whether a request's body will be read: a JSON-RPC post from an allowed page, well formed.
    private func wantsBody(_ head: HTTPRequestParser.Request) -> Bool {
        let mediaType = head.header("Content-Type")?.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces).lowercased()
        let origin = head.header("Origin").map { WebOrigin.allowed($0, host: head.header("Host"), allowed: limits.allowedOrigins) } ?? true
        return head.method == "POST" && HTTPFraming.path(of: head.target) == "/rpc" && mediaType == "application/json" && origin
    }

    /// Answers `request` or starts its calls: the calls started, or nil when its batch must wait for room.
    private func route(_ request: HTTPRequestParser.Request, _ exchange: Int, room: Int, into reading: inout Reading) -> Int? {
        let path = HTTPFraming.path(of: request.target)
        if request.target == "*" {
            // `OPTIONS *`: the server's methods.
            guard request.method == "OPTIONS" else {
                reading.output += complete(exchange, .error(400, ServiceError(.invalidArgument, "* is a target of OPTIONS only")))
                return 0
            }
            reading.output += complete(exchange, HTTPResponse(status: 204, headers: [("Allow", "GET, HEAD, POST, OPTIONS")]))
            return 0
        }
        // A page of another site: refused unless its origin is allowed; when it is, the
        // response says so (CORS), and that it varies with the origin.
        if let origin = request.header("Origin") {
            guard WebOrigin.allowed(origin, host: request.header("Host"), allowed: limits.allowedOrigins) else {
                let error = ServiceError(.permissionDenied, "pages of \(Echo.clip(origin)) may not call this gateway", field: "Origin")
                reading.output += complete(exchange, .error(403, error))
                return 0
            }
            exchanges[exchange]?.headers = [("Access-Control-Allow-Origin", origin), ("Vary", "Origin")]
        }
        guard let (route, params) = HTTPRoute.match(path) else {
            if let file = limits.web?.file(at: path) {
                reading.output += complete(exchange, webFile(file, request))
                return 0
            }
            reading.output += complete(exchange, .error(404, ServiceError(.notFound, "no resource at \(Echo.clip(String(path)))")))
            return 0
        }
        if request.method == "OPTIONS" {
            // A CORS preflight, or a plain question.
            let preflight = request.header("Origin") != nil && request.header("Access-Control-Request-Method") != nil
            let headers =
                preflight
                ? [
                    ("Access-Control-Allow-Methods", route.method), ("Access-Control-Allow-Headers", HTTPFraming.allowedHeaders),
                    ("Access-Control-Max-Age", String(HTTPFraming.preflightMaxAge)),
                ] : [("Allow", route.allow)]
            reading.output += complete(exchange, HTTPResponse(status: 204, headers: headers))
            return 0
        }
        if route.kind == .rpc && request.method == "GET" { return upgrade(request, exchange, into: &reading) }
        let method = request.method == "HEAD" && route.method == "GET" ? "GET" : request.method
        guard method == route.method else {
            let error = ServiceError(.invalidArgument, "\(path) takes \(route.method), not \(Echo.clip(request.method))")
            reading.output += complete(exchange, .error(405, error, headers: [("Allow", route.allow)]))
            return 0
        }
        switch route.kind {
        case .rpc: return rpcCalls(request, exchange, room: room, into: &reading)
        case .resource(let name, _, _):
            exchanges[exchange]?.waiting = 1
            exchanges[exchange]?.resource = (route, request.header("If-None-Match"))
            calls[nextSlot] = (exchange, nil)
            reading.calls.append((nextSlot, Call(method: name, params: HTTPRoute.json(params))))
            nextSlot += 1
            return 1
        }
    }

    /// One of the web app's files (`GET`, `HEAD`), with its tag (`304` when `If-None-Match`
    /// names it); a page with the app's Content-Security-Policy.
    private func webFile(_ file: WebFiles.File, _ request: HTTPRequestParser.Request) -> HTTPResponse {
        let allow = "GET, HEAD, OPTIONS"
        switch request.method {
        case "GET", "HEAD": break
        case "OPTIONS": return HTTPResponse(status: 204, headers: [("Allow", allow)])
        default:
            let error = ServiceError(.invalidArgument, "the web app's files take GET, not \(Echo.clip(request.method))")
            return .error(405, error, headers: [("Allow", allow)])
        }
        var headers = [("ETag", file.etag), ("Cache-Control", file.cacheControl), ("X-Content-Type-Options", "nosniff")]
        if file.contentType.hasPrefix("text/html"), let policy = limits.web?.policy { headers.append(("Content-Security-Policy", policy)) }
        if HTTPResponse.matches(request.header("If-None-Match"), file.etag) { return HTTPResponse(status: 304, headers: headers) }
        return HTTPResponse(status: 200, body: file.bytes, contentType: file.contentType, headers: headers)
    }

    /// `GET /rpc` with `Upgrade: websocket`: RFC 6455's handshake, once nothing is owed (the
    /// bytes after it are the WebSocket's); nil while something is.
    private func upgrade(_ request: HTTPRequestParser.Request, _ exchange: Int, into reading: inout Reading) -> Int? {
        func tokens(_ name: String) -> [String] {
            (request.header(name) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        }
        guard request.minor >= 1 else {
            let error = ServiceError(.invalidArgument, "a WebSocket handshake is HTTP/1.1")
            reading.output += complete(exchange, .error(400, error))
            return 0
        }
        guard tokens("Upgrade").contains("websocket"), tokens("Connection").contains("upgrade") else {
            let error = ServiceError(.invalidArgument, "GET /rpc opens a WebSocket (Upgrade: websocket); JSON-RPC over plain HTTP is POST /rpc", field: "Upgrade")
            reading.output += complete(exchange, .error(426, error, headers: [("Upgrade", "websocket")]))
            return 0
        }
        guard request.header("Sec-WebSocket-Version") == "13" else {
            let error = ServiceError(.invalidArgument, "WebSocket version 13 (RFC 6455) only", field: "Sec-WebSocket-Version")
            reading.output += complete(exchange, .error(426, error, headers: [("Sec-WebSocket-Version", "13")]))
            return 0
        }
        guard let key = request.header("Sec-WebSocket-Key"), key.utf8.count == 24, Data(canonicalBase64: key)?.count == 16 else {
            let error = ServiceError(.invalidArgument, "Sec-WebSocket-Key must be 16 bytes in base64", field: "Sec-WebSocket-Key")
            reading.output += complete(exchange, .error(400, error))
            return 0
        }
        guard calls.isEmpty && exchanges.count == 1 && ready.isEmpty else { return nil }
        exchanges[exchange]?.headers = []
        let accept = SHA1.webSocketAccept(key: key)
        reading.output += complete(exchange, HTTPResponse(status: 101, headers: [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Accept", accept)]))
        reading.upgrade = WebSocketFraming(limits: limits)
        ended = true
        return 0
    }

    /// `POST /rpc`: the body, as one line of the line protocol.
    private func rpcCalls(_ request: HTTPRequestParser.Request, _ exchange: Int, room: Int, into reading: inout Reading) -> Int? {
        let mediaType = request.header("Content-Type")?.prefix { $0 != ";" }.trimmingCharacters(in: .whitespaces).lowercased()
        guard mediaType == "application/json" else {
            let error = ServiceError(.invalidArgument, "a JSON-RPC request is sent as Content-Type: application/json", field: "Content-Type")
            reading.output += complete(exchange, .error(415, error))
            return 0
        }
        var token: String?
        if let authorization = request.header("Authorization") {
            let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else {
                let error = ServiceError(.unauthenticated, "Authorization takes Bearer <token>", field: "Authorization")
                reading.output += complete(exchange, .error(401, error, headers: [("WWW-Authenticate", "Bearer")]))
                return 0
            }
            token = String(parts[1].trimmingCharacters(in: .whitespaces))
        }
        // A line break in JSON is white space, or a raw control character inside a string, which
        // JSON forbids: a carriage return is both of those too, and does not end the line.
        var line = request.body.map { $0 == 0x0A ? 0x0D : $0 }
        guard line.contains(where: { $0 != 0x20 && $0 != 0x0D && $0 != 0x09 }) else {
            let error = ServiceError(.invalidArgument, "parse error: the body holds no JSON")
            exchanges[exchange]?.kind = .rpc(reply: JSONRPC.error(id: Data("null".utf8), error, code: JSONRPC.parseError))
            reading.output += finishRPC(exchange)
            return 0
        }
        line.append(0x0A)
        let read = rpc.read(line[...], atEnd: true, room: room, bytes: .max)
        guard read.consumed > 0 else { return nil }
        exchanges[exchange]?.kind = .rpc(reply: read.output.isEmpty ? [] : Array(read.output.dropLast()))
        exchanges[exchange]?.waiting = read.calls.count
        var refused: [Int] = []
        for (rpcSlot, var call) in read.calls {
            let slot = nextSlot
            nextSlot += 1
            calls[slot] = (exchange, rpcSlot)
            if Subscriptions.methods.contains(call.method) {
                refused.append(slot)
            } else {
                call.token = token
                reading.calls.append((slot, call))
            }
        }
        for slot in refused {
            let error = ServiceError(.invalidArgument, "subscriptions need a connection that stays open: a WebSocket at /rpc, or the line protocol", field: "method")
            reading.output += answer(slot, .failure(error))
        }
        if read.calls.isEmpty { reading.output += finishRPC(exchange) }
        return read.calls.count
    }

    func answer(_ slot: Int, _ outcome: Outcome) -> [UInt8] {
        guard let (exchange, rpcSlot) = calls.removeValue(forKey: slot), var entry = exchanges[exchange] else { return [] }
        entry.waiting -= 1
        if let rpcSlot {
            let line = rpc.answer(rpcSlot, outcome)
            if !line.isEmpty { entry.kind = .rpc(reply: Array(line.dropLast())) }
            exchanges[exchange] = entry
            return entry.waiting == 0 ? finishRPC(exchange) : []
        }
        exchanges[exchange] = entry
        guard let (route, ifNoneMatch) = entry.resource, case .resource(_, let contentType, let cacheControl) = route.kind else { return [] }
        return complete(exchange, .resource(outcome, contentType: contentType, cacheControl: cacheControl, ifNoneMatch: ifNoneMatch, maxBytes: limits.maxReplyBytes))
    }

    /// A JSON-RPC exchange whose calls are all answered: its reply, or `204` for notifications only.
    private func finishRPC(_ exchange: Int) -> [UInt8] {
        guard let entry = exchanges[exchange], entry.waiting == 0, case .rpc(let reply) = entry.kind else { return [] }
        return complete(exchange, reply.isEmpty ? HTTPResponse(status: 204) : HTTPResponse(status: 200, body: reply))
    }

    /// Files `response` as `exchange`'s: the responses now in order to write.
    private func complete(_ exchange: Int, _ response: HTTPResponse) -> [UInt8] {
        guard let entry = exchanges.removeValue(forKey: exchange) else { return [] }
        let bytes = response.bytes(close: entry.close, head: entry.head, headers: entry.headers)
        ready[exchange] = bytes
        heldBytes += bytes.count
        var out: [UInt8] = []
        while let next = ready.removeValue(forKey: nextToWrite) {
            heldBytes -= next.count
            out += next
            nextToWrite += 1
        }
        return out
    }

    /// Pushes go over a WebSocket, not plain HTTP.
    func push(_ push: Push, pattern: String?) -> [UInt8] { [] }
}

/// An HTTP/1.1 response before it is bytes: what its request adds (headers, closing, HEAD)
/// comes when it is written.
struct HTTPResponse {
    var status: Int
    var body: [UInt8] = []
    var contentType = "application/json"
    var headers: [(String, String)] = []

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 200: "OK"
        case 204: "No Content"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 426: "Upgrade Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        default: "Status"
        }
    }

    /// The response's bytes, with `Content-Length` (but for 204 and 304), `headers` after its
    /// own, `Connection: close` when the connection closes after it, and no body for HEAD.
    func bytes(close: Bool, head: Bool, headers more: [(String, String)]) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(HTTPResponse.reason(status))\r\n"
        if status >= 200 && status != 204 && status != 304 { text += "Content-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n" }
        for (name, value) in headers + more { text += "\(name): \(value)\r\n" }
        if close { text += "Connection: close\r\n" }
        text += "\r\n"
        return head ? Array(text.utf8) : Array(text.utf8) + body
    }

    /// The status an error from the closed set is answered with, where HTTP's status is the answer.
    static func status(of code: ErrorCode) -> Int {
        switch code {
        case .invalidArgument: 400
        case .notFound: 404
        case .alreadyExists, .conflict: 409
        case .unauthenticated: 401
        case .permissionDenied: 403
        case .rateLimited: 429
        case .tooLarge: 413
        case .unavailable: 503
        case .deadlineExceeded: 504
        case .internal: 500
        }
    }

    /// `{"error":{"code":…,"message":…,"field":…}}` with `status`.
    static func error(_ status: Int, _ error: ServiceError, headers: [(String, String)] = []) -> HTTPResponse {
        struct Body: Encodable { var error: ServiceError }
        // A replica's hint of its leader (`ServiceError.leader`) is the bus's, never a client's.
        var error = error
        error.leader = nil
        let body = (try? JSONCoding.encoder.encode(Body(error: error))).map { Array($0) } ?? Array(#"{"error":{"code":"internal","message":"internal error"}}"#.utf8)
        return HTTPResponse(status: status, body: body, headers: headers)
    }

    /// A strong tag for `bytes`.
    ///
    /// Two 64-bit FNV-1a sums (of the bytes, and of them with their length as the offset), not
    /// a cryptographic hash: a tag only has to change when the bytes do, and it is made on the
    /// event loop for every resource answered (SHA-1 cost 1 ms a 280 KB document; this about
    /// a tenth). The OpenRPC document's is made once (`documentTag`).
    static func tag<Bytes: DataProtocol>(_ bytes: Bytes) -> String {
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = first ^ UInt64(bytes.count)
        for region in bytes.regions {
            region.withUnsafeBytes { raw in
                for byte in raw {
                    first = (first ^ UInt64(byte)) &* 0x100_0000_01b3
                    second = (second ^ UInt64(byte)) &* 0x100_0000_01b3 &+ 1
                }
            }
        }
        return "\"" + String(first, radix: 16) + "-" + String(second, radix: 16) + "\""
    }

    /// The OpenRPC document's tag: the document is a constant.
    static let documentTag = tag(OpenRPC.document)

    /// Whether an `If-None-Match` (tags, maybe weak `W/"…"`, or `*`) names `tag`.
    static func matches(_ ifNoneMatch: String?, _ tag: String) -> Bool {
        let named = ifNoneMatch.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } ?? []
        return named.contains("*") || named.contains(tag) || named.contains("W/" + tag)
    }

    /// A resource's response: a call's result is the body, with its `ETag` (from its bytes)
    /// and `Cache-Control`; `304` with no body when `If-None-Match` names that tag.
    static func resource(_ outcome: Outcome, contentType: String, cacheControl: String, ifNoneMatch: String?, maxBytes: Int) -> HTTPResponse {
        let body: Data
        switch outcome {
        case .result(let bytes), .bytes(let bytes): body = bytes
        case .failure(let failure): return error(status(of: failure.code), failure)
        case .pong, .subscription: return error(500, ServiceError(.internal, "not a resource"))
        }
        guard body.count <= maxBytes else { return error(500, .replyTooLarge(body.count, limit: maxBytes)) }
        let tag = body == OpenRPC.document ? documentTag : tag(body)
        let headers = [("ETag", tag), ("Cache-Control", cacheControl)]
        if matches(ifNoneMatch, tag) { return HTTPResponse(status: 304, headers: headers) }
        return HTTPResponse(status: 200, body: Array(body), contentType: contentType, headers: headers)
    }
}

/// A route of the gateway's HTTP face: its path template, and what answers it.
struct HTTPRoute {
    enum Kind: Equatable {
        /// JSON-RPC: in `POST` bodies, and over the WebSocket `GET` opens.
        case rpc
        /// A method's result as the body of a `GET`: its params are the path's `{name}` segments.
        case resource(method: String, contentType: String, cacheControl: String)
    }

    /// Literal segments, and `{name}` ones (a decimal integer, maybe followed by a suffix: `{y}.jpg`).
    var template: String
    var kind: Kind

    /// The HTTP method the route takes (and HEAD with GET).
    var method: String { kind == .rpc ? "POST" : "GET" }
    /// What the path takes, for `Allow`.
    var allow: String { kind == .rpc ? "POST, GET, OPTIONS" : "GET, HEAD, OPTIONS" }

    static let all = [
        HTTPRoute(template: "/rpc", kind: .rpc),
        HTTPRoute(template: "/openrpc.json", kind: .resource(method: Methods.Gateway.discover.name, contentType: "application/json", cacheControl: "no-cache")),
        HTTPRoute(
            template: "/tours/{tour_id}/map/{z}/{x}/{y}.jpg",
            kind: .resource(method: Methods.Tours.mapTile.name, contentType: "image/jpeg", cacheControl: "public, max-age=3600")),
        // A hosted photo never changes under its id (a new one gets a new id).
        HTTPRoute(
            template: "/places/{place_id}/photos/{photo_id}/{size}.jpg",
            kind: .resource(method: Methods.Catalog.photo.name, contentType: "image/jpeg", cacheControl: "public, max-age=86400")),
        HTTPRoute(
            template: "/users/{user_id}/photo/{size}.jpg",
            kind: .resource(method: Methods.Profile.photo.name, contentType: "image/jpeg", cacheControl: "public, max-age=60")),
    ]

    /// The route `path` is, and its params; nil when it is none.
    static func match(_ path: Substring) -> (HTTPRoute, [(String, Int64)])? {
        // The routes without params by a plain comparison: `/rpc` is on every request's path.
        if let route = all.first(where: { !$0.template.contains("{") && $0.template == path }) { return (route, []) }
        for route in all where route.template.contains("{") {
            if let params = route.params(path) { return (route, params) }
        }
        return nil
    }

    /// The params of `path` by this route's template, or nil when it is not this route's.
    func params(_ path: Substring) -> [(String, Int64)]? {
        let want = template.split(separator: "/", omittingEmptySubsequences: false)
        let have = path.split(separator: "/", omittingEmptySubsequences: false)
        guard want.count == have.count else { return nil }
        var params: [(String, Int64)] = []
        for (pattern, segment) in zip(want, have) {
            guard pattern.hasPrefix("{"), let close = pattern.firstIndex(of: "}") else {
                guard pattern == segment else { return nil }
                continue
            }
            let suffix = pattern[pattern.index(after: close)...]
            guard segment.hasSuffix(suffix) else { return nil }
            let digits = segment.dropLast(suffix.count)
            // One spelling per number (no leading zero), so one resource has one URL to cache.
            guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0.isASCII && $0.isNumber }), digits.count == 1 || digits.first != "0",
                let value = Int64(digits)
            else { return nil }
            params.append((String(pattern[pattern.index(after: pattern.startIndex)..<close]), value))
        }
        return params
    }

    /// `params` as a JSON object.
    static func json(_ params: [(String, Int64)]) -> Data {
        Data(("{" + params.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}").utf8)
    }
}
