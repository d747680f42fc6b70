import Bus
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The life of a Tourbus process: configuration, start, the ready line, and a graceful stop.
public enum ServiceProcess {
    /// What `start` returns: the endpoints to announce and how to stop.
    public typealias Started = (endpoints: BoundEndpoints, stop: @Sendable () -> Void)

    /// Reads the configuration of `name` from flags, environment and file (exit 2 with usage
    /// on a mistake), starts the process's work (exit 1 if that fails), prints the bound
    /// endpoints as one JSON line on stdout (and to `--ready-file`), then waits for SIGINT or
    /// SIGTERM and stops gracefully (exit 0).
    public static func run(name: String, arguments: [String],
                           start: (ServiceConfig, ZMQContext, Logger) throws -> Started) -> Never {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(ServiceConfig.usage(service: name))
            exit(0)
        }
        let config: ServiceConfig
        do {
            config = try ServiceConfig.load(service: name, arguments: arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            FileHandle.standardError.write(Data("tourbus-\(name): \(error)\n\(ServiceConfig.usage(service: name))\n".utf8))
            exit(2)
        }
        let logger = Logger(component: name, level: config.logLevel)

        // Block the stop signals before any thread exists, so every thread inherits the
        // mask and only sigwait below sees them.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let started: Started
        do {
            started = try start(config, try ZMQContext(), logger)
        } catch {
            logger.error("failed to start", ["error": error])
            exit(1)
        }
        if let line = try? JSONCoding.encoder.encode(started.endpoints) {
            FileHandle.standardOutput.write(line + Data("\n".utf8))
            if let file = config.readyFile { try? line.write(to: URL(fileURLWithPath: file), options: .atomic) }
        }
        logger.info("ready", ["rpc": started.endpoints.rpc.joined(separator: ","), "publish": started.endpoints.publish.joined(separator: ","),
                              "listen": started.endpoints.listen ?? "-"])
        var received: Int32 = 0
        sigwait(&signals, &received)
        logger.info("signal received; stopping", ["signal": received])
        started.stop()
        exit(0)
    }
}
