import Bus
import Contracts
import Foundation
import ServiceKit
import Uploads

/// `catalog.list`: a page of places by id, optionally of one category.
public struct ListPlaces: Codable, Sendable {
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
struct PlaceGet: Decodable, Sendable {
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
        table.onRaw(CatalogRequests.create, .write, description: "add a place: name, category, lat, lon and optional details") { context, store in
            // A plainly shaped body is read by spans; any other goes to the decoder, whose answers and errors are the contract.
            let input = try context.scannedBody.flatMap(PlaceInput.init(spans:)) ?? context.body(PlaceInput.self)
            return Response(body: try store.create(input))
        }
        table.onRaw("catalog.update", .write, description: "change some fields of a place by id; null clears an optional field") { context, store in
            Response(body: try store.update(try context.body(PlaceUpdate.self)))
        }
        table.onRaw("catalog.delete", .write, description: "delete a place by id") { context, store in
            let id = try PlaceID.read(scannedBody: context.scannedBody, envelope: context.envelope).id
            try store.delete(id)
            return Response(body: try JSONCoding.encoder.encode(PlaceDeleted(id: id)))
        }
        table.onRaw(CatalogRequests.get, description: "one place by id; with lang, its texts in that language") { context, store in
            // A plain `{"id":N}` is answered with the stored JSON as it is; with `lang`, localized.
            if let scanned = context.scannedBody, let id = PlaceID.plainID(body: scanned) { return Response(body: try store.json(id)) }
            let request = try context.body(PlaceGet.self)
            guard let lang = try LanguagePreference.read(request.lang) else { return Response(body: try store.json(request.id)) }
            return Response(body: try JSONCoding.encoder.encode(LocalizedPlace(try store.get(request.id), lang)))
        }
        table.on("catalog.list", description: "places by id, optionally of one category, paged by cursor; lang localizes") { (request: ListPlaces, _, store) -> PlacePage in
            let limit = try pageLimit.validated(request.limit)
            let lang = try LanguagePreference.read(request.lang)
            if let category = request.category { try PlaceRules.category(category, among: store.categoryIds) }
            let after = try request.cursor.map(pageCursor.decode) ?? 0
            let places = try store.list(category: request.category, after: after, limit: limit)
            let next = places.count == limit ? places.last.map { pageCursor.encode($0.id) } : nil
            return PlacePage(places: places, nextCursor: next, lang: lang)
        }
        let strings = options.strings
        table.on("strings.get", description: "the apps' interface strings in lang (a tag or Accept-Language list) with a version; since_version skips an unchanged table") {
            (request: StringsGet, _, _) -> StringsReply in
            guard let strings else { throw ServiceError(.unavailable, "this catalog was started without interface strings (--strings-dir)") }
            return try strings.reply(request)
        }
        table.on(CatalogRequests.categories, description: "the categories with how many places each has") { (_: Empty, _, store) in CategoryList(categories: try store.categoryCounts()) }
        table.on("tours.create", .write, description: "add a tour: name (or name_i18n), optional description, stops as place ids in order") {
            (input: TourInput, _, store) in try store.createTour(input)
        }
        table.on("tours.update", .write, description: "change some fields of a tour by id (stops replace the whole list); null clears an optional field") {
            (update: TourUpdate, _, store) in try store.updateTour(update)
        }
        table.on("tours.delete", .write, description: "delete a tour by id; its places stay") { (request: TourDeleted, _, store) in
            try store.deleteTour(request.id)
            return request
        }
        table.on("tours.get", description: "one tour by id with its stops' places in order, texts in lang where it has them") {
            (request: TourGet, _, store) in try store.tourDetail(request)
        }
        table.on("tours.list", description: "tours by id, or those with a stop near a point (radius_m, default 10 km), nearest first; paged") {
            (request: TourList, _, store) in try store.listTours(request)
        }
        table.on("tours.map.upload.begin", .write, description: "start uploading a tour map's JPEG; answers its upload_id") {
            (_: Empty, _, store) in try store.beginUpload()
        }
        table.on("tours.map.upload.append", .write, description: "add the next chunk (base64, at most 512 KiB) to an upload; offset guards retries") {
            (request: UploadChunk, _, store) in try store.appendUpload(request)
        }
        table.on("tours.map.upload.commit", .write, description: "finish an upload: the JPEG is checked (at most 30 MB and 40 megapixels)") {
            (request: MapUpload, _, store) in try store.commitUpload(request.uploadId)
        }
        table.on("tours.map.set", .write, description: "make a committed upload a tour's map, placed by 3 or more control points {x, y, lat, lon}") {
            (request: MapSet, _, store) -> TourMapInfo in
            let info = try store.setMap(request, maxRMSMeters: store.options.mapMaxRMSMeters)
            store.worker.wakeAfterCommit(store.tileCutter)
            return info
        }
        table.on("tours.map.get", description: "a tour's map: size, control points, residuals, world file, tile levels, tiles_ready") {
            (request: MapTileRequest, _, store) in try store.mapInfo(request.tourId)
        }
        table.onRaw("tours.map.tile", description: "one 256x256 JPEG tile z/x/y of a tour's map (RESP: raw bytes; JSON-RPC: base64)") { context, store in
            let tile = try store.mapTile(try context.body(MapTileRequest.self))
            return Response(body: Data(#"{"content_type":"image/jpeg","bytes":\#(tile.count)}"#.utf8), attachments: [tile])
        }
        table.on("catalog.import.begin", .write, description: "start an import: format content (our XML) or osm, dry_run; answers its import_id") {
            (request: ImportBegin, _, store) in try store.beginImport(request)
        }
        table.on("catalog.import.append", .write, description: "add the next chunk (base64, at most 512 KiB) of the document, or of a map image named by file") {
            (request: ImportAppend, _, store) in try store.appendImport(request)
        }
        table.on("catalog.import.commit", .write, description: "finish sending an import: it is read and applied in the background") {
            (request: ImportRef, _, store) -> ImportStatus in
            let status = try store.commitImport(request.importId)
            store.worker.wakeAfterCommit(store.importer)
            return status
        }
        table.on("catalog.import.status", description: "an import's state and its report: counts created, updated, unchanged, and every error with its line") {
            (request: ImportRef, _, store) in try store.importStatus(request.importId)
        }
        table.on("catalog.import.apply", .write, description: "internal: writes an import the import thread has read (the service sends it itself)") {
            (_: Empty, _, store) in try store.applyImport()
        }
        table.on("tours.locate", .write, description: "where you are on a tour (lat, lon, course_deg?): map pixel, heading, next stop; stops within 30 m are visited") {
            (request: TourLocate, context, store) in try store.locate(request, user: try WalkRules.caller(context))
        }
        table.on("tours.progress", description: "your visited stops of a tour in order, the next stop, counts") {
            (request: TourProgressRequest, context, store) in try store.progress(request, user: try WalkRules.caller(context))
        }
        table.on("tours.progress.reset", .write, description: "forget your visited stops and last position on a tour") {
            (request: TourProgressRequest, context, store) in try store.resetProgress(request, user: try WalkRules.caller(context))
        }
        table.on("library.add", .write, description: "download a tour for one of your devices: tour_id, device_id; answers a sealed, signed package's manifest") {
            (request: LibraryAdd, context, store) in try store.addToLibrary(request, user: try WalkRules.caller(context))
        }
        table.on("library.package", description: "one piece (256 KiB, base64) of a package library.add made: package_id, piece") {
            (request: LibraryPieceRequest, context, store) in try store.packagePiece(request, user: try WalkRules.caller(context))
        }
        table.on("library.list", description: "the tours you downloaded and the places your library holds") { (_: Empty, context, store) in
            try store.library(of: try WalkRules.caller(context))
        }
        table.on("library.remove", .write, description: "take a tour out of your library; places another of its tours holds stay") {
            (request: LibraryTourRef, context, store) in try store.removeFromLibrary(request, user: try WalkRules.caller(context))
        }
        table.on("library.hide", .write, description: "remove a place from your library (lists and new packages leave it out)") {
            (request: LibraryPlaceRef, context, store) in try store.hideInLibrary(request, user: try WalkRules.caller(context))
        }
        table.on("library.key", description: "the server's Ed25519 public key, which signs packages") { (_: Empty, _, store) in
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
        definition.periodic = [PeriodicRequest(type: "catalog.import.apply", intervalMilliseconds: 100)]
        return definition
    }
}
