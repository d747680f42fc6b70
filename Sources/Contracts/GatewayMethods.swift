import Bus

// The methods the gateway answers itself (its built-ins) and those every service's runtime
// answers on the bus (`sys.*`, never offered to clients).

extension Methods.Gateway {
    public static let ping = Method<Empty, String>("ping", .gateway, .anyone, .read, "liveness of the gateway itself")
    public static let help = Method<Empty, GatewayHelp>("help", .gateway, .anyone, .read, "every method with a one-line description")
    public static let discover = Method<Empty, OpenRPCDocument>(
        "rpc.discover", .gateway, .anyone, .read,
        "this API's OpenRPC 1.3 document: every method, its params, result and errors (Protocols/openrpc.json)")
    public static let status = Method<Empty, GatewayStatus>(
        "gateway.status", .gateway, .anyone, .read,
        "each backend: up or down, latency, last error; open client connections")
    public static let subscribe = Method<TopicsRequest, TopicsHeard>(
        "subscribe", .gateway, .user, .read,
        "hear your pushes on topics: {topics: [...]} (signed in; RESP: SUBSCRIBE topic ...)",
        errors: [
            .unauthenticated(nil, "the connection is not signed in, or signed out before it took"),
            .unauthenticated("token", "the connection's session ended"),
            .tooLarge(nil, "16 connections of the user already hear pushes on this gateway"),
        ])
    public static let unsubscribe = Method<TopicsRequest, TopicsHeard>(
        "unsubscribe", .gateway, .anyone, .read,
        "stop hearing pushes on topics, or on all without any (RESP: UNSUBSCRIBE [topic ...])")
}

extension Methods.Auth {
    public static let resume = Method<TokenBody, TokenOwner>(
        "auth.resume", .gateway, .anyone, .read,
        "sign this connection in with a token from auth.login (RESP: AUTH <token>)",
        errors: [.unauthenticated("token", "the token is not a live session: malformed, unknown or expired")], ownsTokenParam: true)
}

extension Methods.System {
    public static let ping = Method<Empty, PingReply>(
        "sys.ping", .runtime, .internal, .read, "liveness: the service name and its clock", staleMilliseconds: .max)
    public static let methods = Method<Empty, MethodList>(
        "sys.methods", .runtime, .internal, .read, "the request types this service answers", staleMilliseconds: .max)
    public static let stats = Method<Empty, ServiceStats>(
        "sys.stats", .runtime, .internal, .read,
        "the service's request counters, outbox head, subscriptions and replication", staleMilliseconds: .max)
    public static let replay = Method<ReplayRequest, ReplayReply>(
        "sys.replay", .runtime, .internal, .read,
        "the events after a cursor: after, limit; one event envelope per extra frame")
    public static let snapshot = Method<SnapshotRequest, SnapshotReply>(
        "sys.snapshot", .runtime, .internal, .read,
        "the service's shared state as events, paged by an opaque key: after, limit")
    public static let transfer = Method<TransferRequest, TransferReply>(
        "sys.transfer", .runtime, .internal, .read,
        "a replicated service's leader hands leadership to replica to (or the most up-to-date one), before its host is stopped",
        errors: [.invalid("to", "not another replica's number"), .unavailable(nil, "the service is not replicated")])
    public static let backup = Method<BackupRequest, BackupReply>(
        "sys.backup", .runtime, .internal, .read,
        "a consistent copy of the service's SQLite file, made by the service itself (by a follower in step with its leader, of what it applied): to",
        staleMilliseconds: 1_000)
}

extension Methods {
    /// The gateway's built-ins, in the order `help` lists them.
    static let gatewayOwned: [any DeclaresMethod] = [
        Methods.Gateway.ping, Methods.Gateway.help, Methods.Gateway.discover, Methods.Gateway.status,
        Methods.Auth.resume, Methods.Gateway.subscribe, Methods.Gateway.unsubscribe,
    ]

    /// What every service's runtime answers on the bus.
    static let runtimeOwned: [any DeclaresMethod] = [
        Methods.System.ping, Methods.System.methods, Methods.System.stats,
        Methods.System.replay, Methods.System.snapshot, Methods.System.backup,
    ]
}
