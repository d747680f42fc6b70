import Foundation
import TourbusCLI

exit(TourbusCommand.main(Array(CommandLine.arguments.dropFirst())))
