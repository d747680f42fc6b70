import Bus
import Contracts
import Foundation
import NotifyService
import ServiceCore
import ServiceKit
import TestSupport

let notifyQuiet = Logger(component: "notify-test", level: .error) { _ in }

/// 2026-06-01T00:00:00Z in milliseconds: where the fixture's clock starts.
let notifyEpochMs: Int64 = 1_780_272_000_000

/// Sydney's Circular Quay, where most tests post.
let quay = (lat: -33.8610, lon: 151.2110)

/// A form of version `version`: `kind` (a, b), `detail` depending on it, and `line`, whose one
/// choice `t1` exists only within 5 km of Circular Quay (so `line` is required there only).
func notifyFormJSON(version: Int = 1) -> String {
    #"""
    {"version":\#(version),"fields":[
     {"name":"kind","labels":{"en":"Kind","fr":"Genre"},"choices":[{"value":"a","labels":{"en":"A","fr":"Un"}},{"value":"b","labels":{"en":"B"}}]},
     {"name":"detail","labels":{"en":"Detail"},"depends_on":"kind","choices":[{"value":"a1","parent":"a","labels":{"en":"A1"}},{"value":"b1","parent":"b","labels":{"en":"B1"}}]},
     {"name":"line","labels":{"en":"Line"},"choices":[{"value":"t1","labels":{"en":"T1"},"region":{"lat":-33.861,"lon":151.211,"radius_m":5000}}]}]}
    """#
}

/// The values that pass `notifyFormJSON` near Circular Quay.
let quayValues = #"{"kind":"a","detail":"a1","line":"t1"}"#

/// A notify service running in this process on loopback ports, with a hand-moved clock
/// (milliseconds), a client, and a SUB socket on its PUB endpoint subscribed to `push.`.
final class NotifyFixture {
    let folder: TemporaryFolder
    let context: ZMQContext
    let clock: Locked<Int64>
    let runtime: ServiceRuntime<NotifyStore>
    let client: RPCClient

    /// `initialForm` is stored at start when the database has none; `folder` reuses another
    /// fixture's data (a restart).
    init(initialForm: String? = nil, folder: TemporaryFolder? = nil, configure: (inout NotifyOptions) -> Void = { _ in }) throws {
        self.folder = folder ?? TemporaryFolder("notify")
        context = try ZMQContext()
        var config = ServiceConfig(service: "notify")
        config.dataDirectory = self.folder.path
        config.heartbeatMilliseconds = 50
        let clock = Locked(notifyEpochMs)
        self.clock = clock
        var options = NotifyOptions()
        options.clock = { clock.value }
        options.initialForm = initialForm.map { Data($0.utf8) }
        // Tests of the rules report and submit often on a clock that stands still; the limits of
        // one user have tests of their own (NotifyEdgeTests), which put them back.
        options.reportIntervalMs = 0
        options.submitsPerMinute = 1_000
        options.liveAnnotationsPerUser = 10_000
        configure(&options)
        runtime = try ServiceRuntime(definition: NotifyService.definition(options: options), config: config, context: context, logger: notifyQuiet)
        client = try RPCClient(context: context, endpoints: runtime.endpoints.rpc, logger: notifyQuiet)
    }

    deinit {
        client.close()
        runtime.stop()
    }

    /// Moves the clock by `ms` milliseconds.
    func advance(_ ms: Int64) { clock.withLock { $0 += ms } }

    /// Sends a raw JSON body as `user` (nil: no identity) and returns the reply body, or throws the error.
    @discardableResult
    func call(_ type: String, _ json: String = "{}", as user: Int64? = nil, role: String = "user") throws(ServiceError) -> [String: Any] {
        let reply = try client.request(type: type, body: Data(json.utf8), auth: user.map { Auth(userId: String($0), role: role) },
                                       timeoutMilliseconds: 5_000)
        return (try? JSONSerialization.jsonObject(with: reply.bodyJSON)) as? [String: Any] ?? [:]
    }

    /// The error `call` throws, or nil when it succeeds.
    func error(_ type: String, _ json: String = "{}", as user: Int64? = nil, role: String = "user") -> ServiceError? {
        do {
            try call(type, json, as: user, role: role)
            return nil
        } catch {
            return error
        }
    }

    /// Sets `notifyFormJSON(version:)` as admin 1.
    func setForm(version: Int = 1) throws {
        try call("annotations.form.set", #"{"form":\#(notifyFormJSON(version: version))}"#, as: 1, role: "admin")
    }

    /// Submits an annotation as `user` at `lat, lon` (near the quay by default) and returns its id.
    @discardableResult
    func submit(by user: Int64, lat: Double = quay.lat, lon: Double = quay.lon, values: String = quayValues, text: String? = nil) throws -> Int64 {
        let textMember = try text.map { #","text":"# + String(decoding: try JSONEncoder().encode($0), as: UTF8.self) } ?? ""
        let reply = try call("annotations.submit", #"{"lat":\#(lat),"lon":\#(lon),"values":\#(values)\#(textMember)}"#, as: user)
        return (reply["id"] as? NSNumber)?.int64Value ?? 0
    }

    /// The service's pushes, as a gateway hears them.
    func pushListener() throws -> PushListener { try PushListener(context, endpoints: runtime.endpoints.publish) }
}

/// A JSON object's text as a dictionary.
func jsonObject(_ data: Data) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
}

/// The `field` of a refusal, or "no error" when the call succeeded.
func refusedField(_ error: ServiceError?) -> String {
    guard let error else { return "no error" }
    return "\(error.code.rawValue) \(error.field ?? "-")"
}
