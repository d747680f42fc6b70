import Bus
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The endpoints a started process really bound: its ready line.
public struct BoundEndpoints: Codable, Sendable, Equatable {
    public var service: String
    public var rpc: [String]
    public var publish: [String]
    /// The gateway's TCP endpoint (`host:port`); nil for services.
    public var listen: String?
    /// The operators' metrics endpoint (`host:port`), when `--metrics-listen` asks for one.
    public var metrics: String?
    public var pid: Int32

    public init(service: String, rpc: [String] = [], publish: [String] = [], listen: String? = nil, metrics: String? = nil) {
        self.service = service
        self.rpc = rpc
        self.publish = publish
        self.listen = listen
        self.metrics = metrics
        self.pid = getpid()
    }
}
