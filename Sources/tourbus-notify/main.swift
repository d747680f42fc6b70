import Foundation
import NotifyService
import ServiceKit

// `--form FILE` (this executable's own flag): a form stored at start when the database has none.
var arguments = Array(CommandLine.arguments.dropFirst())
var options = NotifyOptions()
if let flag = arguments.firstIndex(of: "--form") {
    guard flag + 1 < arguments.count else {
        FileHandle.standardError.write(Data("tourbus-notify: --form needs a file\n".utf8))
        exit(2)
    }
    let path = arguments[flag + 1]
    arguments.removeSubrange(flag...(flag + 1))
    do {
        let json = try Data(contentsOf: URL(fileURLWithPath: path))
        _ = try AnnotationForm(json: json)
        options.initialForm = json
    } catch {
        FileHandle.standardError.write(Data("tourbus-notify: --form \(path): \(error)\n".utf8))
        exit(2)
    }
}
// `--day-poll-s N` and `--night-poll-s N`: annotations.sync's next_poll_s by day (05:00-23:00 in
// the caller's time zone) and by night, 1 to 86,400 s.
for (flag, apply) in [("--day-poll-s", { (n: Int) in options.dayPollSeconds = n }), ("--night-poll-s", { (n: Int) in options.nightPollSeconds = n })] {
    guard let at = arguments.firstIndex(of: flag) else { continue }
    guard at + 1 < arguments.count, let seconds = Int(arguments[at + 1]), (1...86_400).contains(seconds) else {
        FileHandle.standardError.write(Data("tourbus-notify: \(flag) takes 1 to 86400 seconds\n".utf8))
        exit(2)
    }
    apply(seconds)
    arguments.removeSubrange(at...(at + 1))
}
ServiceRuntime.main(NotifyService.definition(options: options), arguments: arguments)
