import Bus

// The catalog's methods: places, categories, interface strings, tours and their maps, imports, walking a tour and the library.
// Declared once here; the service binds its handlers to them (see Method.swift).

/// How stale a place a follower of a replicated catalog may answer with: it has heard from
/// its leader within a second (ten heartbeats), so it has every commit older than that.
private let followerReadMilliseconds = 1_000

extension Methods.Catalog {
    public static let create = Method<PlaceInput, Place>(
        "catalog.create", .catalog, .admin, .write,
        "add a place: name, category, lat, lon and optional details",
        errors: [.alreadyExists("external_ids", "an external id already belongs to another place")])
    public static let update = Method<PlaceUpdate, Place>(
        "catalog.update", .catalog, .admin, .write,
        "change some fields of a place by id; null clears an optional field",
        errors: [
            .notFound("id", "no place has this id"),
            .conflict("expected_version", "the place is at another version"),
            .alreadyExists("external_ids", "an external id already belongs to another place"),
        ])
    public static let delete = Method<PlaceID, PlaceDeleted>(
        "catalog.delete", .catalog, .admin, .write,
        "delete a place by id",
        errors: [.notFound("id", "no place has this id")])
    public static let get = Method<PlaceGet, LocalizedPlace>(
        "catalog.get", .catalog, .anyone, .read,
        "one place by id; with lang, its texts in that language",
        errors: [.notFound("id", "no place has this id")], staleMilliseconds: followerReadMilliseconds)
    public static let list = Method<ListPlaces, PlacePage>(
        "catalog.list", .catalog, .anyone, .read,
        "places by id, optionally of one category, paged by cursor; lang localizes", staleMilliseconds: followerReadMilliseconds)
    public static let categories = Method<Empty, CategoryList>(
        "catalog.categories", .catalog, .anyone, .read,
        "the categories with how many places each has", staleMilliseconds: followerReadMilliseconds)
    public static let photoAdd = Method<PlacePhotoAdd, Place>(
        "catalog.photo.add", .catalog, .admin, .write,
        "host a committed upload (tours.map.upload.*, a JPEG) as a photo of a place, kept at 1280 and 320 px; answers the place",
        errors: [
            .notFound("place_id", "no place has this id"),
            .notFound("upload_id", "no upload has this id, or it expired"),
            .conflict("upload_id", "the upload is not committed yet"),
            .invalid("place_id", "the place has 20 hosted photos already"),
            .tooLarge("upload_id", "the JPEG is over 10 MiB or decodes too large for a photo"),
        ])
    public static let photo = Method<PlacePhotoRef, PlacePhotoReply>(
        "catalog.photo", .catalog, .anyone, .read,
        "one hosted photo of a place, size 1280 or 320 (its longest side): a JPEG (RESP: raw bytes; JSON-RPC: base64)",
        errors: [.notFound("photo_id", "the place has no hosted photo with this id")], staleMilliseconds: followerReadMilliseconds)
    public static let photoDelete = Method<PlacePhotoRef, Place>(
        "catalog.photo.delete", .catalog, .admin, .write,
        "delete a hosted photo of a place; answers the place",
        errors: [.notFound("photo_id", "the place has no hosted photo with this id")])
    public static let importBegin = Method<ImportBegin, ImportStatus>(
        "catalog.import.begin", .catalog, .admin, .write,
        "start an import: format content (our XML) or osm, dry_run; answers its import_id",
        errors: [.rateLimited(nil, "4 imports are already under way")])
    public static let importAppend = Method<ImportAppend, ImportStatus>(
        "catalog.import.append", .catalog, .admin, .write,
        "add the next chunk (base64, at most 512 KiB) of the document, or of a map image named by file",
        errors: [
            .notFound("import_id", "no import has this id, or it expired"),
            .conflict("import_id", "the import is no longer receiving"),
            .conflict("offset", "the file holds another number of bytes than offset"),
            .tooLarge("chunk", "the document, a file beside it or all those files would pass their limit"),
            .tooLarge("file", "200 files are already beside the document"),
        ])
    public static let importCommit = Method<ImportRef, ImportStatus>(
        "catalog.import.commit", .catalog, .admin, .write,
        "finish sending an import: it is read and applied in the background",
        errors: [
            .notFound("import_id", "no import has this id, or it expired"),
            .conflict("import_id", "the import is no longer receiving"),
        ])
    public static let importStatus = Method<ImportRef, ImportStatus>(
        "catalog.import.status", .catalog, .admin, .read,
        "an import's state and its report: counts created, updated, unchanged, and every error with its line",
        errors: [.notFound("import_id", "no import has this id, or it expired")])
    public static let importApply = Method<Empty, PeriodicWork>(
        "catalog.import.apply", .catalog, .internal, .write,
        "writes a slice of an import the import thread has read (the service sends it itself); more: some is left")
}

extension Methods.Strings {
    public static let get = Method<StringsGet, StringsReply>(
        "strings.get", .catalog, .anyone, .read,
        "the apps' interface strings in lang (a tag or Accept-Language list) with a version; since_version skips an unchanged table",
        errors: [.unavailable(nil, "the catalog was started without interface strings (--strings-dir)")])
}

extension Methods.Tours {
    public static let create = Method<TourInput, Tour>(
        "tours.create", .catalog, .admin, .write,
        "add a tour: name (or name_i18n), optional description, stops as place ids in order",
        errors: [.alreadyExists("external_ids", "an external id already belongs to another tour")])
    public static let update = Method<TourUpdate, Tour>(
        "tours.update", .catalog, .admin, .write,
        "change some fields of a tour by id (stops replace the whole list); null clears an optional field",
        errors: [
            .notFound("id", "no tour has this id"),
            .conflict("expected_version", "the tour is at another version"),
            .alreadyExists("external_ids", "an external id already belongs to another tour"),
        ])
    public static let delete = Method<TourDeleted, TourDeleted>(
        "tours.delete", .catalog, .admin, .write,
        "delete a tour by id; its places stay",
        errors: [.notFound("id", "no tour has this id")])
    public static let get = Method<TourGet, TourDetail>(
        "tours.get", .catalog, .anyone, .read,
        "one tour by id with its stops' places in order, texts in lang where it has them",
        errors: [.notFound("id", "no tour has this id")])
    public static let list = Method<TourList, TourPage>(
        "tours.list", .catalog, .anyone, .read,
        "tours by id, or those with a stop near a point (radius_m, default 10 km), nearest first; paged")
    public static let mapUploadBegin = Method<Empty, MapUpload>(
        "tours.map.upload.begin", .catalog, .admin, .write,
        "start uploading a tour map's JPEG; answers its upload_id",
        errors: [.rateLimited(nil, "16 map uploads are already open")])
    public static let mapUploadAppend = Method<UploadChunk, MapUpload>(
        "tours.map.upload.append", .catalog, .admin, .write,
        "add the next chunk (base64, at most 512 KiB) to an upload; offset guards retries",
        errors: [
            .notFound("upload_id", "no upload has this id, or it expired"),
            .conflict("upload_id", "the upload is committed already"),
            .conflict("offset", "the upload holds another number of bytes than offset"),
            .tooLarge("chunk", "the image would pass 30 MiB"),
        ])
    public static let mapUploadCommit = Method<MapUpload, MapUpload>(
        "tours.map.upload.commit", .catalog, .admin, .write,
        "finish an upload: the JPEG is checked (at most 30 MB and 40 megapixels)",
        errors: [
            .notFound("upload_id", "no upload has this id, or it expired"),
            .conflict("upload_id", "the upload is committed already"),
            .tooLarge("upload_id", "the JPEG is over 30 MiB or 40 megapixels, or decodes too large"),
        ])
    public static let mapSet = Method<MapSet, TourMapInfo>(
        "tours.map.set", .catalog, .admin, .write,
        "make a committed upload a tour's map, placed by 3 or more control points {x, y, lat, lon}",
        errors: [
            .notFound("tour_id", "no tour has this id"),
            .notFound("upload_id", "no upload has this id, or it expired"),
            .conflict("upload_id", "the upload is not committed yet"),
        ])
    public static let mapGet = Method<MapTileRequest, TourMapInfo>(
        "tours.map.get", .catalog, .anyone, .read,
        "a tour's map: size, control points, residuals, world file, tile levels, tiles_ready",
        errors: [.notFound("tour_id", "the tour has no map")])
    public static let mapTile = Method<MapTileRequest, TileReply>(
        "tours.map.tile", .catalog, .anyone, .read,
        "one 256x256 JPEG tile z/x/y of a tour's map (RESP: raw bytes; JSON-RPC: base64)",
        errors: [
            .notFound("tour_id", "the tour has no map"),
            .unavailable(nil, "the map's tiles are still being cut"),
            .notFound("z", "the map has no tile z/x/y"),
        ])
    public static let locate = Method<TourLocate, TourPosition>(
        "tours.locate", .catalog, .user, .write,
        "where you are on a tour (lat, lon, course_deg?): map pixel, heading, next stop; stops within 30 m are visited",
        errors: [
            .notFound("tour_id", "no tour has this id"),
            .unauthenticated(nil, "the account was deleted moments ago"),
        ])
    public static let progress = Method<TourProgressRequest, TourProgressReply>(
        "tours.progress", .catalog, .user, .read,
        "your visited stops of a tour in order, the next stop, counts",
        errors: [.notFound("tour_id", "no tour has this id")])
    public static let progressReset = Method<TourProgressRequest, TourProgressReply>(
        "tours.progress.reset", .catalog, .user, .write,
        "forget your visited stops and last position on a tour",
        errors: [.notFound("tour_id", "no tour has this id")])
}

extension Methods.Library {
    public static let add = Method<LibraryAdd, PackageManifest>(
        "library.add", .catalog, .user, .write,
        "download a tour for one of your devices: tour_id, device_id; answers a sealed, signed package's manifest",
        errors: [
            .unavailable(nil, "the catalog has no signing key"),
            .notFound("device_id", "you have no registered device with this id"),
            .rateLimited("tour_id", "4 downloads in the last 10 s already"),
            .notFound("tour_id", "no tour has this id"),
            .conflict("tour_id", "your library holds 100 tours already"),
            .tooLarge("tour_id", "the package without tiles would be over its size limit"),
        ])
    public static let package = Method<LibraryPieceRequest, PackagePiece>(
        "library.package", .catalog, .user, .read,
        "one piece (256 KiB, base64) of a package library.add made: package_id, piece",
        errors: [.notFound("package_id", "you have no such package: expired, replaced, or its device revoked")])
    public static let list = Method<Empty, LibraryContents>(
        "library.list", .catalog, .user, .read,
        "the tours you downloaded and the places your library holds")
    public static let remove = Method<LibraryTourRef, LibraryContents>(
        "library.remove", .catalog, .user, .write,
        "take a tour out of your library; places another of its tours holds stay",
        errors: [.notFound("tour_id", "the tour is not in your library")])
    public static let hide = Method<LibraryPlaceRef, LibraryContents>(
        "library.hide", .catalog, .user, .write,
        "remove a place from your library (lists and new packages leave it out)",
        errors: [.notFound("place_id", "the place is not in your library, or hidden already")])
    public static let key = Method<Empty, SigningKeyInfo>(
        "library.key", .catalog, .anyone, .read,
        "the server's Ed25519 public key, which signs packages",
        errors: [.unavailable(nil, "the catalog has no signing key")])
}

extension Methods {
    /// The methods the catalog service answers.
    static let catalogOwned: [any DeclaresMethod] = [
        Methods.Catalog.create, Methods.Catalog.update, Methods.Catalog.delete,
        Methods.Catalog.get, Methods.Catalog.list, Methods.Catalog.categories,
        Methods.Catalog.photoAdd, Methods.Catalog.photo, Methods.Catalog.photoDelete,
        Methods.Catalog.importBegin, Methods.Catalog.importAppend, Methods.Catalog.importCommit,
        Methods.Catalog.importStatus, Methods.Catalog.importApply, Methods.Strings.get,
        Methods.Tours.create, Methods.Tours.update, Methods.Tours.delete,
        Methods.Tours.get, Methods.Tours.list, Methods.Tours.mapUploadBegin,
        Methods.Tours.mapUploadAppend, Methods.Tours.mapUploadCommit, Methods.Tours.mapSet,
        Methods.Tours.mapGet, Methods.Tours.mapTile, Methods.Tours.locate,
        Methods.Tours.progress, Methods.Tours.progressReset, Methods.Library.add,
        Methods.Library.package, Methods.Library.list, Methods.Library.remove,
        Methods.Library.hide, Methods.Library.key, Methods.Streets.list, Methods.Streets.chunk,
    ]
}
