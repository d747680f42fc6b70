import Bus
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A started Tourbus process's work, as `ServiceProcess.run` runs it: a service's runtime or
/// the gateway.
public protocol Service: AnyObject, Sendable {
    /// What was bound, for the ready line.
    var endpoints: BoundEndpoints { get }
    /// Stops everything the service started, the last started first (see `Lifecycle`).
    func stop()
    /// Takes what may change while running from a configuration read again on SIGHUP: the
    /// CURVE keys a service admits. Nothing by default.
    func reload(_ config: CommonConfig)
}

extension Service {
    public func reload(_ config: CommonConfig) {}
}

/// The configuration of one kind of process (`ServiceConfig`, `GatewayConfig`): how it is
/// read, and what `--help` says.
public protocol ProcessConfig: Sendable {
    /// The settings every process has.
    var common: CommonConfig { get }
    /// Reads the configuration of process `name` from flags, environment and file.
    static func load(process name: String, arguments: [String], environment: [String: String]) throws(ConfigError) -> Self
    /// Usage text for `--help`.
    static func usage(process name: String) -> String
}

/// The life of a Tourbus process: configuration, start, the ready line, and a graceful stop.
public enum ServiceProcess {
    /// Raises the soft limit on open files to the hard one: a bus port's connections (a
    /// stranger's included, until the handshake timeout drops them) and the gateway's clients
    /// each hold one, and 1,024, a common default, is soon taken.
    static func raiseFileLimit(_ logger: Logger) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        let wanted = min(limit.rlim_max, 1 << 20)
        guard wanted > limit.rlim_cur else { return }
        limit.rlim_cur = wanted
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) != 0 {
            logger.warn("could not raise the open-files limit", ["errno": errno])
        }
    }

    /// Reads the configuration of `name` from flags, environment and file (exit 2 with usage
    /// on a mistake), starts the process's work (exit 1 if that fails), prints the bound
    /// endpoints as one JSON line on stdout (and to `--ready-file`), then waits for SIGINT or
    /// SIGTERM and stops the service gracefully (exit 0). SIGHUP reads the configuration
    /// again and hands it to `Service.reload`; a configuration that no longer loads is
    /// logged and changes nothing.
    public static func run<Config: ProcessConfig>(
        name: String, arguments: [String],
        start: (Config, ZMQContext, Logger) throws -> any Service
    ) -> Never {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(Config.usage(process: name))
            exit(0)
        }
        let config: Config
        do {
            config = try Config.load(process: name, arguments: arguments, environment: ProcessInfo.processInfo.environment)
        } catch {
            FileHandle.standardError.write(Data("tourbus-\(name): \(error)\n\(Config.usage(process: name))\n".utf8))
            exit(2)
        }
        let common = config.common
        let logger = Logger(component: name, level: common.logLevel)
        raiseFileLimit(logger)

        // Block the stop signals before any thread exists, so every thread inherits the
        // mask and only sigwait below sees them.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGHUP)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let service: any Service
        do {
            service = try start(config, try ZMQContext(), logger)
        } catch {
            logger.error("failed to start", ["error": error])
            exit(1)
        }
        let endpoints = service.endpoints
        if let line = try? JSONCoding.encoder.encode(endpoints) {
            FileHandle.standardOutput.write(line + Data("\n".utf8))
            if let file = common.readyFile { try? line.write(to: URL(fileURLWithPath: file), options: .atomic) }
        }
        logger.info(
            "ready",
            [
                "rpc": endpoints.rpc.joined(separator: ","), "publish": endpoints.publish.joined(separator: ","),
                "listen": endpoints.listen ?? "-",
            ])
        var received: Int32 = 0
        while sigwait(&signals, &received) == 0 && received == SIGHUP {
            do {
                let again = try Config.load(process: name, arguments: arguments, environment: ProcessInfo.processInfo.environment)
                service.reload(again.common)
            } catch {
                logger.error("SIGHUP: configuration not reloaded", ["error": error])
            }
        }
        logger.info("signal received; stopping", ["signal": received])
        service.stop()
        exit(0)
    }
}
