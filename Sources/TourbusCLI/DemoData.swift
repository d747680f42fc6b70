import Bus
import Contracts
import Foundation

/// The Sydney demo that `tourbus up` loads into an empty suite, read from its folder of data
/// files (`deploy/demo`; see its README.md):
/// - `places.json`: the places, one JSON object each in the shape `catalog.create` takes;
/// - `translations.json`: names in other languages by demo external id, merged into each
///   place's `name_i18n` (with its own name as `en`);
/// - `tours.json`: walking tours, each a `tours.create` body and its stops as demo ids;
/// - `annotations.json`: annotations posted by a demo user, as `annotations.submit` takes them.
struct DemoData {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// A tour and its stops, named by their places' demo external ids, in walking order.
    struct DemoTour: Decodable {
        var tour: TourInput
        var stops: [String]
    }

    var places: [PlaceInput]
    var tours: [DemoTour]
    /// Each annotation's JSON body.
    var annotations: [Data]

    /// The demo of `folder`; a file missing or not in its shape is a `Failure` naming it.
    static func load(from folder: String) throws -> DemoData {
        func path(_ name: String) -> String { (folder as NSString).appendingPathComponent(name) }
        func read<T: Decodable>(_ name: String, as type: T.Type) throws -> T {
            do {
                return try JSONCoding.decoder.decode(type, from: try Data(contentsOf: URL(fileURLWithPath: path(name))))
            } catch {
                throw Failure(description: "\(path(name)): \(error)")
            }
        }
        let translations = try read("translations.json", as: [String: [String: String]].self)
        let places = try read("places.json", as: [PlaceInput].self).map { merged($0, translations) }
        let annotations: [Data]
        do {
            let items = try JSONSerialization.jsonObject(with: try Data(contentsOf: URL(fileURLWithPath: path("annotations.json")))) as? [[String: Any]]
            guard let items else { throw Failure(description: "not a list of objects") }
            annotations = try items.map { try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) }
        } catch {
            throw Failure(description: "\(path("annotations.json")): \(error)")
        }
        return DemoData(places: places, tours: try read("tours.json", as: [DemoTour].self), annotations: annotations)
    }

    /// `place` with its translations merged into `name_i18n` (its `name` as `en`), when it has any.
    static func merged(_ place: PlaceInput, _ translations: [String: [String: String]]) -> PlaceInput {
        guard let id = place.externalIds?["demo"], let names = translations[id] else { return place }
        var place = place
        var texts = place.nameI18n ?? [:]
        if let name = place.name { texts["en"] = texts["en"] ?? name }
        for (language, name) in names { texts[language] = texts[language] ?? name }
        place.nameI18n = texts
        return place
    }
}
