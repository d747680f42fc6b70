import CatalogService
import Foundation
import Sealing
import ServiceKit

// This executable's own flags:
// `--map-max-rms-m M`: tours.map.set refuses control points whose RMS residual is over M metres (default 25).
// `--signing-key FILE` (or TOURBUS_SIGNING_KEY): the server's Ed25519 key file (tourbus keys --signing),
// which signs library.add's packages; a file others may read, or that holds no key pair, stops the start.
var arguments = Array(CommandLine.arguments.dropFirst())
var options = CatalogOptions()
func refuse(_ message: String) -> Never {
    FileHandle.standardError.write(Data("tourbus-catalog: \(message)\n".utf8))
    exit(2)
}
if let flag = arguments.firstIndex(of: "--map-max-rms-m") {
    guard flag + 1 < arguments.count, let metres = Double(arguments[flag + 1]), metres.isFinite, metres > 0, metres <= 10_000 else {
        refuse("--map-max-rms-m takes metres, more than 0 and at most 10000")
    }
    options.mapMaxRMSMeters = metres
    arguments.removeSubrange(flag...(flag + 1))
}
var signingKeyFile = ProcessInfo.processInfo.environment["TOURBUS_SIGNING_KEY"]
if let flag = arguments.firstIndex(of: "--signing-key") {
    guard flag + 1 < arguments.count, !arguments[flag + 1].isEmpty else { refuse("--signing-key takes the key file tourbus keys --signing wrote") }
    signingKeyFile = arguments[flag + 1]
    arguments.removeSubrange(flag...(flag + 1))
}
if let signingKeyFile {
    do {
        options.signingKey = try SigningKey(keyFile: signingKeyFile)
    } catch {
        refuse("\(error)")
    }
}
ServiceRuntime.main(CatalogService.definition(options: options), arguments: arguments)
