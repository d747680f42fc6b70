import Bus
import Contracts
import Foundation
import ServiceKit
import Uploads

/// The catalog service: places, categories and tours, published as `catalog.place.*` and `catalog.tour.*` events.
public enum CatalogService {
    /// Page sizes of `catalog.list`.
    /// Page cursors of `catalog.list`: the last id seen.
    static let pageCursor = IDCursor(tag: "p", maxLength: 64, minimum: 0)

    /// The definition `ServiceRuntime` runs; each one has a tile cutter of its own.
    public static func definition(options: CatalogOptions = CatalogOptions()) -> ServiceDefinition<CatalogStore> {
        let tileCutter = BackgroundSignal()
        let importer = BackgroundSignal()
        let importPlans = ImportPlans()
        var table = HandlerTable<CatalogStore>()
        // A place's JSON is kept ready in its row: create, update and get answer it as it is.
        table.onRaw(Methods.Catalog.create) { context, store in
            // Held to its shape, then read by spans when plainly shaped; any other body goes to the decoder.
            let input = try context.checkedParams(PlaceInput.self, spans: PlaceInput.init(spans:))
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
            let limit = try PageLimit.places.validated(request.limit)
            let lang = try LanguagePreference.read(request.lang)
            if let category = request.category { try PlaceRules.category(category, among: store.categoryIds) }
            let after = try request.cursor.map(pageCursor.decode) ?? 0
            let places = try store.list(category: request.category, after: after, limit: limit)
            let next = places.count == limit ? places.last.map { pageCursor.encode($0.id) } : nil
            return PlacePage(places: places.map { place in lang.map { LocalizedPlace(place, $0) } ?? LocalizedPlace(place: place) }, nextCursor: next)
        }
        let strings = options.strings
        table.on(Methods.Strings.get) {
            (request: StringsGet, _, _) -> StringsReply in
            guard let strings else { throw ServiceError(.unavailable, "this catalog was started without interface strings (--strings-dir)") }
            return try strings.reply(request)
        }
        // On a reader: the image is decoded there, off the writer (see addPhoto).
        table.onRaw(Methods.Catalog.photoAdd, runsOn: .read) { context, store in
            Response(body: try store.addPhoto(try context.checkedParams(PlacePhotoAdd.self)))
        }
        table.onRaw(Methods.Catalog.photo) { context, store in
            let photo = try store.photo(try context.checkedParams(PlacePhotoRef.self))
            return Response(body: try JSONCoding.encoder.encode(photo.reply), attachments: [photo.jpeg])
        }
        table.onRaw(Methods.Catalog.photoDelete) { context, store in
            Response(body: try store.deletePhoto(try context.checkedParams(PlacePhotoRef.self)))
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
            // One read transaction: a tour deleted meanwhile is not half in the page.
            (request: TourList, _, store) in try store.db.transaction(.deferred) { try store.listTours(request) }
        }
        table.on(Methods.Tours.mapUploadBegin) {
            (_: Empty, _, store) in try store.beginUpload()
        }
        table.on(Methods.Tours.mapUploadAppend) {
            (request: UploadChunk, _, store) in try store.appendUpload(request)
        }
        // On a reader: the image is decoded there, off the writer (see commitUpload).
        table.on(Methods.Tours.mapUploadCommit, runsOn: .read) {
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
            return Response(body: try JSONCoding.encoder.encode(TileReply(contentType: "image/jpeg", bytes: tile.count)), attachments: [tile])
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
        // On a reader: a walker standing still writes nothing (see locate).
        table.on(Methods.Tours.locate, runsOn: .read) { (request: TourLocate, caller, _, store) in try store.locate(request, user: caller.id) }
        table.on(Methods.Tours.progress) { (request: TourProgressRequest, caller, _, store) in try store.progress(request, user: caller.id) }
        table.on(Methods.Tours.progressReset) { (request: TourProgressRequest, caller, _, store) in try store.resetProgress(request, user: caller.id) }
        // On a reader: the package is built and sealed there, and written in a short transaction (see addToLibrary).
        table.on(Methods.Library.add, runsOn: .read) { (request: LibraryAdd, caller, _, store) in try store.addToLibrary(request, user: caller.id) }
        table.on(Methods.Library.package) { (request: LibraryPieceRequest, caller, _, store) in try store.packagePiece(request, user: caller.id) }
        table.on(Methods.Library.list) { (_: Empty, caller, _, store) in
            try store.library(of: caller.id)
        }
        table.on(Methods.Library.remove) { (request: LibraryTourRef, caller, _, store) in try store.removeFromLibrary(request, user: caller.id) }
        table.on(Methods.Library.hide) { (request: LibraryPlaceRef, caller, _, store) in try store.hideInLibrary(request, user: caller.id) }
        // Street networks, for search's routes (StreetSets.swift).
        table.on(Methods.Streets.list) { (_: Empty, _, store) in try StreetSets.list(store.db) }
        table.on(Methods.Streets.chunk) { (request: StreetChunkRequest, _, store) in try StreetSets.chunk(request, store.db) }
        table.on(Methods.Library.key) { (_: Empty, _, store) in
            SigningKeyInfo(publicKey: try LibraryRules.key(store.options).publicKeyBase64)
        }
        let erased = RecentlyErased(windowMilliseconds: options.erasedUserWindowMs)
        let decoding = ReaderGate(most: 1)
        var definition = ServiceDefinition(
            name: "catalog", migrations: CatalogSchema.migrations + LibraryRules.migrations + StreetSets.migrations + AddressSets.migrations, handlers: table, publishes: true,
            snapshot: { store, after, limit in try store.snapshot(after: after, limit: limit) },
            // Social's events erase a deleted user's walks and library and tell the devices
            // packages are sealed to (without social's endpoints the catalog runs, warning that
            // it is not subscribed).
            subscriptions: ["social": EventApplier(features: [LibraryRules.socialEvents, WalkRules.socialEvents(clock: options.clock, erased: erased)])],
            makeState: { worker in
                try CatalogStore(
                    worker: worker, options: options, tileCutter: tileCutter, importer: importer, importPlans: importPlans, erased: erased,
                    decoding: decoding)
            })
        definition.background = [
            BackgroundWork(name: "tiles", signal: tileCutter, step: TileCutter.step),
            BackgroundWork(name: "imports", signal: importer) { db, _ in try ImportPlanner.step(db, plans: importPlans, options: options) },
        ]
        definition.periodic = [
            PeriodicRequest(Methods.Catalog.importApply, intervalMilliseconds: 100, busyIntervalMilliseconds: options.importStepMilliseconds)
        ]
        return definition
    }
}
