import Gateway
import ServiceKit

ServiceProcess.run(name: "gateway", arguments: Array(CommandLine.arguments.dropFirst())) { config, context, logger in
    let gateway = try GatewayServer(config: config, context: context, logger: logger)
    return (BoundEndpoints(service: "gateway", listen: gateway.endpoint), gateway.stop)
}
