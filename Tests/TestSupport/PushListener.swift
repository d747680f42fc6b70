import Bus
import Contracts
import Foundation

/// A service's pushes as a gateway hears them: a SUB socket on the service's PUB endpoints.
public final class PushListener {
    public let socket: Socket

    /// Subscribes to `push.` on `endpoints`, returning once a heartbeat shows the socket is
    /// connected (at most 5 s), so no push sent after this is missed.
    public init(_ context: ZMQContext, endpoints: [String]) throws {
        socket = try Socket(context, .sub)
        try socket.subscribe(Push.framePrefix)
        try socket.subscribe("sys.heartbeat")
        try socket.setReceiveTimeout(milliseconds: 50)
        for endpoint in endpoints { try socket.connect(endpoint) }
        var connected = false
        for _ in 0..<100 where !connected {
            if let frames = try socket.receive(), String(decoding: frames[0], as: UTF8.self) == "sys.heartbeat" { connected = true }
        }
    }

    /// The next push within about 2 s (heartbeats passed over), or nil.
    public func next() throws -> Push? {
        for _ in 0..<40 {
            guard let frames = try socket.receive() else { continue }
            if String(decoding: frames[0], as: UTF8.self).hasPrefix(Push.framePrefix) { return try Push.read(frames) }
        }
        return nil
    }
}
