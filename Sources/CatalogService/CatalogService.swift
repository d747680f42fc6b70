import Bus
import Contracts
import Foundation
import ServiceKit
import Uploads

/// `catalog.list`: a page of places by id, optionally of one category.
public struct ListPlaces: Codable, Sendable, DeclaredShape {
    public var category: String?
    public var limit: Int?
    public var cursor: String?
    /// A language tag or Accept-Language list: each place's texts in it (`LanguagePreference`).
    public var lang: String?

    public init(category: String? = nil, limit: Int? = nil, cursor: String? = nil, lang: String? = nil) {
        self.category = category
        self.limit = limit
        self.cursor = cursor
        self.lang = lang
    }
}

/// `catalog.get`: a place by id, its texts in `lang` when given.
struct PlaceGet: Decodable, Sendable, DeclaredShape {
    var id: Int64
    var lang: String?
}

/// A place with its `name` and `description` in the request's language, and `lang` saying
/// which languages they came from: the Place's members and `lang`.
struct LocalizedPlace: Encodable, Sendable {
    var place: Place
    var lang: TextLanguages

    /// `place` with its texts in `lang` (`LanguageTexts.localized`).
    init(_ place: Place, _ lang: LanguagePreference) {
        let name = LanguageTexts.localized(place.nameI18n, lang, own: place.name)
        let description = LanguageTexts.localized(place.descriptionI18n, lang, own: place.description)
        self.place = place
        self.place.name = name.text ?? place.name
        self.place.description = description.text
        self.lang = TextLanguages(name: name.tag, description: description.tag)
    }

    enum CodingKeys: String, CodingKey { case lang }

    func encode(to encoder: Encoder) throws {
        try place.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(lang, forKey: .lang)
    }
}

/// A page of places and the cursor of the next page (nil on the last).
public struct PlacePage: Codable, Sendable {
    public var places: [Place]
    public var nextCursor: String?
    /// The language the request asked for: the places are then written localized (`LocalizedPlace`).
    var lang: LanguagePreference? = nil

    enum CodingKeys: String, CodingKey {
        case places
        case nextCursor = "next_cursor"
    }

    init(places: [Place], nextCursor: String?, lang: LanguagePreference? = nil) {
        self.places = places
        self.nextCursor = nextCursor
        self.lang = lang
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        places = try c.decode([Place].self, forKey: .places)
        nextCursor = try c.decodeIfPresent(String.self, forKey: .nextCursor)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        if let lang { try c.encode(places.map { LocalizedPlace($0, lang) }, forKey: .places) } else { try c.encode(places, forKey: .places) }
        try c.encodeIfPresent(nextCursor, forKey: .nextCursor)
    }
}

/// The catalog service: places, categories and tours, published as `catalog.place.*` and `catalog.tour.*` events.
public enum CatalogService {
    /// Page sizes of `catalog.list`.
    static let pageLimit = PageLimit(default: 20, max: 100)
    /// Page cursors of `catalog.list`: the last id seen.
    static let pageCursor = IDCursor(tag: "p", maxLength: 64, minimum: 0)

    /// The definition `ServiceRuntime` runs; each one has a tile cutter of its own.
    public static func definition(options: CatalogOptions = CatalogOptions()) -> ServiceDefinition<CatalogStore> {
        let tileCutter = BackgroundSignal(), importer = BackgroundSignal()
        let importPlans = ImportPlans()
        var table = HandlerTable<CatalogStore>()
        // A place's JSON is kept ready in its row: create, update and get answer it as it is.
        table.onRaw(Methods.Catalog.create) { context, store in
            // A plainly shaped body is read by spans; any other goes to the decoder, whose answers and errors are the contract.
            let input = try context.scannedBody.flatMap(PlaceInput.init(spans:)) ?? context.checkedParams(PlaceInput.self)
            return Response(body: try store.create(input))
        }
        table.onRaw(Methods.Catalog.update) { context, store in
            Response(body: try store.update(try context.checkedParams(PlaceUpdate.self)))
        }
        table.onRaw(Methods.Catalog.delete) { context, store in
            let id = try PlaceID.read(scannedBody: context.scannedBody, envelope: context.envelope).id
            try store.delete(id)
            return Response(body: try JSONCoding.encoder.encode(PlaceDeleted(id: id)))
        }
        table.onRaw(Methods.Catalog.get) { context, store in
            // A plain `{"id":N}` is answered with the stored JSON as it is; with `lang`, localized.
            if let scanned = context.scannedBody, let id = PlaceID.plainID(body: scanned) { return Response(body: try store.json(id)) }
            let request = try context.checkedParams(PlaceGet.self)
            guard let lang = try LanguagePreference.read(request.lang) else { return Response(body: try store.json(request.id)) }
            return Response(body: try JSONCoding.encoder.encode(LocalizedPlace(try store.get(request.id), lang)))
        }
        table.on(Methods.Catalog.list) { (request: ListPlaces, _, store) -> PlacePage in
            let limit = try pageLimit.validated(request.limit)
            let lang = try LanguagePreference.read(request.lang)
            if let category = request.category { try PlaceRules.category(category, among: store.categoryIds) }
            let after = try request.cursor.map(pageCursor.decode) ?? 0
            let places = try store.list(category: request.category, after: after, limit: limit)
            let next = places.count == limit ? places.last.map { pageCursor.encode($0.id) } : nil
            return PlacePage(places: places, nextCursor: next, lang: lang)
        }
        let strings = options.strings
        table.on(Methods.Strings.get) {
            (request: StringsGet, _, _) -> StringsReply in
            guard let strings else { throw ServiceError(.unavailable, "this catalog was started without interface strings (--strings-dir)") }
            return try strings.reply(request)
        }
        table.on(Methods.Catalog.categories) { (_: Empty, _, store) in CategoryList(categories: try store.categoryCounts()) }
        table.on(Methods.Tours.create) {
            (input: TourInput, _, store) in try store.createTour(input)
        }
        table.on(Methods.Tours.update) {
            (update: TourUpdate, _, store) in try store.updateTour(update)
        }
        table.on(Methods.Tours.delete) { (request: TourDeleted, _, store) in
            try store.deleteTour(request.id)
            return request
        }
        table.on(Methods.Tours.get) {
            (request: TourGet, _, store) in try store.tourDetail(request)
        }
        table.on(Methods.Tours.list) {
            (request: TourList, _, store) in try store.listTours(request)
        }
        table.on(Methods.Tours.mapUploadBegin) {
            (_: Empty, _, store) in try store.beginUpload()
        }
        table.on(Methods.Tours.mapUploadAppend) {
            (request: UploadChunk, _, store) in try store.appendUpload(request)
        }
        table.on(Methods.Tours.mapUploadCommit) {
            (request: MapUpload, _, store) in try store.commitUpload(request.uploadId)
        }
        table.on(Methods.Tours.mapSet) {
            (request: MapSet, _, store) -> TourMapInfo in
            let info = try store.setMap(request, maxRMSMeters: store.options.mapMaxRMSMeters)
            store.worker.wakeAfterCommit(store.tileCutter)
            return info
        }
        table.on(Methods.Tours.mapGet) {
            (request: MapTileRequest, _, store) in try store.mapInfo(request.tourId)
        }
        table.onRaw(Methods.Tours.mapTile) { context, store in
            let tile = try store.mapTile(try context.checkedParams(MapTileRequest.self))
            return Response(body: Data(#"{"content_type":"image/jpeg","bytes":\#(tile.count)}"#.utf8), attachments: [tile])
        }
        table.on(Methods.Catalog.importBegin) {
            (request: ImportBegin, _, store) in try store.beginImport(request)
        }
        table.on(Methods.Catalog.importAppend) {
            (request: ImportAppend, _, store) in try store.appendImport(request)
        }
        table.on(Methods.Catalog.importCommit) {
            (request: ImportRef, _, store) -> ImportStatus in
            let status = try store.commitImport(request.importId)
            store.worker.wakeAfterCommit(store.importer)
            return status
        }
        table.on(Methods.Catalog.importStatus) {
            (request: ImportRef, _, store) in try store.importStatus(request.importId)
        }
        table.on(Methods.Catalog.importApply) {
            (_: Empty, _, store) in try store.applyImport()
        }
        table.on(Methods.Tours.locate) { (request: TourLocate, caller, _, store) in try store.locate(request, user: caller.id) }
        table.on(Methods.Tours.progress) { (request: TourProgressRequest, caller, _, store) in try store.progress(request, user: caller.id) }
        table.on(Methods.Tours.progressReset) { (request: TourProgressRequest, caller, _, store) in try store.resetProgress(request, user: caller.id) }
        table.on(Methods.Library.add) { (request: LibraryAdd, caller, _, store) in try store.addToLibrary(request, user: caller.id) }
        table.on(Methods.Library.package) { (request: LibraryPieceRequest, caller, _, store) in try store.packagePiece(request, user: caller.id) }
        table.on(Methods.Library.list) { (_: Empty, caller, _, store) in
            try store.library(of: caller.id)
        }
        table.on(Methods.Library.remove) { (request: LibraryTourRef, caller, _, store) in try store.removeFromLibrary(request, user: caller.id) }
        table.on(Methods.Library.hide) { (request: LibraryPlaceRef, caller, _, store) in try store.hideInLibrary(request, user: caller.id) }
        table.on(Methods.Library.key) { (_: Empty, _, store) in
            SigningKeyInfo(publicKey: try LibraryRules.key(store.options).publicKeyBase64)
        }
        let erased = RecentlyErased(windowMilliseconds: options.erasedUserWindowMs)
        var definition = ServiceDefinition(
            name: "catalog", migrations: CatalogSchema.migrations + LibraryRules.migrations, handlers: table, publishes: true,
            snapshot: { store, after, limit in try store.snapshot(after: after, limit: limit) },
            // Social's events erase a deleted user's walks and library and tell the devices
            // packages are sealed to (without social's endpoints the catalog runs, warning that
            // it is not subscribed).
            subscriptions: ["social": WalkRules.socialApplier(clock: options.clock, erased: erased)],
            makeState: { worker in
                try CatalogStore(worker: worker, options: options, tileCutter: tileCutter, importer: importer, importPlans: importPlans, erased: erased)
            })
        definition.background = [
            BackgroundWork(name: "tiles", signal: tileCutter, step: TileCutter.step),
            BackgroundWork(name: "imports", signal: importer) { db, _ in try ImportPlanner.step(db, plans: importPlans, options: options) },
        ]
        definition.periodic = [PeriodicRequest(Methods.Catalog.importApply, intervalMilliseconds: 100)]
        return definition
    }
}
