# A larger region built from real streets, for issue 33's routing and geocoding benchmarks
# (the one exception to the real-data rule: no larger real extract installs here). Copies of
# the Helsinki extract (deploy/local/helsinki-osm) laid out in a grid of COLS x ROWS tiles a
# little apart, each copy's elements numbered anew (densely, as Routino keeps ids in 32 bits),
# its addresses given a city (a real Finnish town's name) and a
# postcode of their own, and neighbouring tiles joined by arterials (highway=primary, two-way)
# between the nodes of two-way streets that cars may use nearest their shared edge, ARTERIALS
# per edge. The layout and the
# arterials depend only on the extract and the arguments, so a run is repeatable.
#
#   region.py HELSINKI.osm OUT.osm [cols] [rows] [arterials]     (defaults: 7 6 3)
import sys
import xml.etree.ElementTree as ET

# The cities of the copies after the first (Helsinki's own): real Finnish towns, so a copy's
# addresses are told apart by a city's name as real ones are (a number would read as a house's).
TOWNS = ["Espoo", "Vantaa", "Tampere", "Turku", "Oulu", "Jyväskylä", "Lahti", "Kuopio", "Pori", "Kouvola", "Joensuu",
         "Lappeenranta", "Hämeenlinna", "Vaasa", "Seinäjoki", "Rovaniemi", "Mikkeli", "Kotka", "Salo", "Porvoo", "Kokkola",
         "Hyvinkää", "Lohja", "Järvenpää", "Rauma", "Kajaani", "Kerava", "Savonlinna", "Nokia", "Kangasala", "Ylöjärvi",
         "Riihimäki", "Vihti", "Raahe", "Kirkkonummi", "Imatra", "Sastamala", "Tornio", "Kemi", "Iisalmi", "Varkaus"]
from xml.sax.saxutils import quoteattr


def main(argv):
    src, out = argv[0], argv[1]
    cols = int(argv[2]) if len(argv) > 2 else 7
    rows = int(argv[3]) if len(argv) > 3 else 6
    per_edge = int(argv[4]) if len(argv) > 4 else 3
    root = ET.parse(src).getroot()
    nodes = root.findall("node")
    ways = root.findall("way")
    relations = root.findall("relation")
    lats = [float(n.get("lat")) for n in nodes]
    lons = [float(n.get("lon")) for n in nodes]
    south, north, west, east = min(lats), max(lats), min(lons), max(lons)
    # Tiles 10 % apart: each arterial crosses open ground, as a road between towns does.
    dlat, dlon = (north - south) * 1.1, (east - west) * 1.1
    # Each copy numbers its nodes, ways and relations densely after the copies before it.
    index = {kind: {int(e.get("id")): i + 1 for i, e in enumerate(elements)}
             for kind, elements in (("node", nodes), ("way", ways), ("relation", relations))}

    def new_id(kind, old, copy):
        i = index[kind].get(old)
        return None if i is None else copy * len(index[kind]) + i
    # Streets everyone may use both ways: the arterials join walking, cycling and driving alike.
    streets = {"primary", "secondary", "tertiary", "unclassified", "residential", "living_street"}
    highway_nodes = set()
    for w in ways:
        tags = {t.get("k"): t.get("v") for t in w.findall("tag")}
        if tags.get("highway") in streets and tags.get("oneway", "no") == "no" and tags.get("access", "yes") == "yes":
            highway_nodes.update(int(nd.get("ref")) for nd in w.findall("nd"))
    position = {int(n.get("id")): (float(n.get("lat")), float(n.get("lon"))) for n in nodes}
    routable = [i for i in highway_nodes if i in position]

    def nearest_edge(side, count):
        """The `count` highway nodes nearest one side of the extract, spread along it."""
        key = {"north": lambda i: north - position[i][0], "south": lambda i: position[i][0] - south,
               "east": lambda i: east - position[i][1], "west": lambda i: position[i][1] - west}[side]
        along = (lambda i: position[i][1]) if side in ("north", "south") else (lambda i: position[i][0])
        band = sorted(routable, key=key)[: max(count * 20, 50)]
        band.sort(key=along)
        return [band[(k * (len(band) - 1)) // max(1, count - 1)] for k in range(count)] if count > 1 else band[:1]

    edges = {side: nearest_edge(side, per_edge) for side in ("north", "south", "east", "west")}
    copies = cols * rows
    # The id of the node an extract's edge cut away: no node of the region has it.
    missing = copies * len(nodes) + 1
    with open(out, "w", encoding="utf-8") as f:
        f.write("<?xml version='1.0' encoding='UTF-8'?>\n<osm version=\"0.6\" generator=\"tourbus bench/region.py\">\n")
        f.write('  <bounds minlat="%.7f" minlon="%.7f" maxlat="%.7f" maxlon="%.7f"/>\n'
                % (south, west, south + dlat * rows, west + dlon * cols))

        def attrs(e, kind, copy, extra=None):
            # Versions and timestamps are left out: no reader here uses them, and without them
            # the region stays under the catalog's 256 MiB bound on an OSM import.
            a = {k: v for k, v in e.attrib.items() if k not in ("version", "timestamp", "changeset", "user", "uid")}
            a["id"] = str(new_id(kind, int(a["id"]), copy))
            if extra:
                a.update(extra)
            return " ".join("%s=%s" % (k, quoteattr(v)) for k, v in a.items())

        def tags(e, copy):
            out = []
            for t in e.findall("tag"):
                k, v = t.get("k"), t.get("v")
                if copy and k == "addr:city":
                    v = TOWNS[(copy - 1) % len(TOWNS)]
                elif copy and k == "addr:postcode" and v.isdigit():
                    v = "%05d" % ((int(v) + copy * 1000) % 100000)
                out.append('    <tag k=%s v=%s/>\n' % (quoteattr(k), quoteattr(v)))
            return "".join(out)

        for copy in range(copies):
            row, col = divmod(copy, cols)
            for n in nodes:
                moved = {"lat": "%.7f" % (float(n.get("lat")) + row * dlat), "lon": "%.7f" % (float(n.get("lon")) + col * dlon)}
                body = tags(n, copy)
                f.write("  <node %s%s\n" % (attrs(n, "node", copy, moved), ">\n" + body + "  </node>" if body else "/>"))
        arterial = 0
        for copy in range(copies):
            for w in ways:
                f.write("  <way %s>\n" % attrs(w, "way", copy))
                # A node the extract lacks stays missing (an id no node has), so that a way its
                # edge cuts is cut in the copies too, not joined across the gap.
                refs = (new_id("node", int(nd.get("ref")), copy) for nd in w.findall("nd"))
                f.write("".join('    <nd ref="%d"/>\n' % (missing if ref is None else ref) for ref in refs))
                f.write(tags(w, copy) + "  </way>\n")
        # Arterials: to the tile east and the tile north of each.
        for copy in range(copies):
            row, col = divmod(copy, cols)
            pairs = []
            if col + 1 < cols:
                pairs += [(new_id("node", a, copy), new_id("node", b, copy + 1)) for a, b in zip(edges["east"], edges["west"])]
            if row + 1 < rows:
                pairs += [(new_id("node", a, copy), new_id("node", b, copy + cols)) for a, b in zip(edges["north"], edges["south"])]
            for a, b in pairs:
                arterial += 1
                f.write('  <way id="%d" version="1">\n    <nd ref="%d"/>\n    <nd ref="%d"/>\n' % (copies * len(ways) + arterial, a, b))
                f.write('    <tag k="highway" v="primary"/>\n    <tag k="name" v="Arterial %d"/>\n    <tag k="maxspeed" v="60"/>\n  </way>\n' % arterial)
        for copy in range(copies):
            for r in relations:
                f.write("  <relation %s>\n" % attrs(r, "relation", copy))
                for m in r.findall("member"):
                    # A member outside the extract is left out.
                    ref = new_id(m.get("type"), int(m.get("ref")), copy)
                    if ref is not None:
                        f.write('    <member type=%s ref="%d" role=%s/>\n' % (quoteattr(m.get("type")), ref, quoteattr(m.get("role", ""))))
                f.write(tags(r, copy) + "  </relation>\n")
        f.write("</osm>\n")
    print("%d copies of %d nodes, %d ways, %d relations; %d arterials" % (copies, len(nodes), len(ways), len(relations), arterial), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
