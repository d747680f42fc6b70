# Times Debian's libroutino (the routing engine issue 33 starts from) through ctypes: the
# database a `planetsplitter` run made in DIR, `pairs` random routes per mode between points
# of the region snapped to its network (seeded, so repeatable), and a 25 x 25 matrix as 625
# routes (Routino routes one pair at a time). Prints JSON: per mode, the routes found, those
# not found (ends on pieces of the network no route joins), the points no road was near,
# the found routes' time p50/p99/max in ms, and the matrix's time in ms with its failures.
#
#   routino_routes.py DIR SOUTH WEST NORTH EAST [pairs] [seed]     (defaults: 500 33)
import ctypes
import json
import random
import sys
import time

PROFILES = b"/usr/share/routino/profiles.xml"
TRANSLATIONS = b"/usr/share/routino/translations.xml"
# ROUTINO_ROUTE_LIST_TEXT (512) alone, asked for as here, crashes inside Routino_CalculateRoute;
# LIST_TEXT_ALL, every point of the route (what a polyline needs), does not.
QUICKEST, LIST_TEXT_ALL = 1, 1024
MODES = {"walking": b"foot", "bicycling": b"bicycle", "driving": b"motorcar"}


class Output(ctypes.Structure):
    pass


Output._fields_ = [("next", ctypes.POINTER(Output)), ("lon", ctypes.c_float), ("lat", ctypes.c_float),
                   ("dist", ctypes.c_float), ("time", ctypes.c_float), ("speed", ctypes.c_float),
                   ("type", ctypes.c_int), ("turn", ctypes.c_int), ("bearing", ctypes.c_int),
                   ("name", ctypes.c_char_p), ("desc1", ctypes.c_char_p), ("desc2", ctypes.c_char_p),
                   ("desc3", ctypes.c_char_p)]


def main(argv):
    folder = argv[0].encode()
    south, west, north, east = map(float, argv[1:5])
    pairs = int(argv[5]) if len(argv) > 5 else 500
    rng = random.Random(int(argv[6]) if len(argv) > 6 else 33)
    lib = ctypes.CDLL("libroutino.so")
    lib.Routino_LoadDatabase.restype = ctypes.c_void_p
    lib.Routino_LoadDatabase.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    lib.Routino_GetProfile.restype = ctypes.c_void_p
    lib.Routino_GetTranslation.restype = ctypes.c_void_p
    lib.Routino_ValidateProfile.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.Routino_FindWaypoint.restype = ctypes.c_void_p
    lib.Routino_FindWaypoint.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_double, ctypes.c_double]
    lib.Routino_CalculateRoute.restype = ctypes.POINTER(Output)
    lib.Routino_CalculateRoute.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                           ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    lib.Routino_DeleteRoute.argtypes = [ctypes.POINTER(Output)]
    if lib.Routino_Check_API_Version(8) != 0:
        sys.exit("libroutino: not API version 8")
    started = time.perf_counter()
    database = lib.Routino_LoadDatabase(folder, None)
    if not database or lib.Routino_ParseXMLProfiles(PROFILES) or lib.Routino_ParseXMLTranslations(TRANSLATIONS):
        sys.exit("libroutino: could not load the database or the XML files (errno %d)" % ctypes.c_int.in_dll(lib, "Routino_errno").value)
    loaded_ms = (time.perf_counter() - started) * 1000
    translation = lib.Routino_GetTranslation(b"en")
    result = {"load_ms": round(loaded_ms, 1), "modes": {}}

    def waypoint(profile):
        """A random point of the region snapped to the mode's network (None: none near)."""
        for _ in range(50):
            w = lib.Routino_FindWaypoint(database, profile, rng.uniform(south, north), rng.uniform(west, east))
            if w:
                return w
        return None

    def route(profile, a, b):
        points = (ctypes.c_void_p * 2)(a, b)
        t0 = time.perf_counter()
        out = lib.Routino_CalculateRoute(database, profile, translation, points, 2, QUICKEST | LIST_TEXT_ALL, None)
        ms = (time.perf_counter() - t0) * 1000
        if not out:
            return ms, None
        last = out
        while last.contents.next:
            last = last.contents.next
        found = (last.contents.dist, last.contents.time)
        lib.Routino_DeleteRoute(out)
        return ms, found

    for mode, name in MODES.items():
        profile = lib.Routino_GetProfile(name)
        if not profile or lib.Routino_ValidateProfile(database, profile):
            sys.exit("libroutino: profile %s does not fit the database" % name.decode())
        times, missed, unsnapped, failed_ms, km = [], 0, 0, [], []
        for _ in range(pairs):
            a, b = waypoint(profile), waypoint(profile)
            if a is None or b is None:
                unsnapped += 1
                continue
            ms, got = route(profile, a, b)
            if got:
                times.append(ms)
                km.append(got[0])
            else:
                missed += 1
                failed_ms.append(ms)
        times.sort()
        sources = [w for w in (waypoint(profile) for _ in range(25)) if w]
        destinations = [w for w in (waypoint(profile) for _ in range(25)) if w]
        matrix_failed = 0
        t0 = time.perf_counter()
        for a in sources:
            for b in destinations:
                matrix_failed += route(profile, a, b)[1] is None
        matrix_ms = (time.perf_counter() - t0) * 1000
        pick = lambda q: round(times[min(len(times) - 1, int(len(times) * q))], 2) if times else None
        result["modes"][mode] = {"routes": len(times), "no_route": missed, "unsnapped": unsnapped, "p50_ms": pick(0.5), "p99_ms": pick(0.99),
                                 "max_ms": round(times[-1], 2) if times else None,
                                 "no_route_mean_ms": round(sum(failed_ms) / len(failed_ms), 2) if failed_ms else None,
                                 "mean_km": round(sum(km) / len(km), 2) if km else None,
                                 "matrix": "%dx%d" % (len(sources), len(destinations)), "matrix_ms": round(matrix_ms, 1),
                                 "matrix_no_route": matrix_failed}
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
