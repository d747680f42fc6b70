extension OSMMapping {
    /// A copy of `Protocols/osm-mapping.tsv`, byte for byte (OSMMappingTests compares them), so
    /// the executables need no file beside them.
    static let standardTable = #"""
        # OpenStreetMap tags -> Tourbus categories, for the OSM import (Protocols/import.md, "OpenStreetMap").
        #
        # One rule a line: TAG, white space (tabs or spaces), CATEGORY. TAG is key=value, or key=* for any
        # value of the key. CATEGORY is one of: restaurant cafe bar hotel hostel attraction museum park
        # beach viewpoint shopping market theatre nightlife transport; or "-" to leave the element out.
        # Lines starting with # and empty lines are ignored.
        #
        # Precedence: the FIRST line whose tag the element carries decides, so more specific and more
        # touristic tags come first. An element with tourism=hotel and amenity=restaurant is a hotel; a
        # historic building that is a museum (historic=* and tourism=museum) is a museum; shop=vacant is
        # left out although shop=* follows. Elements no line matches are not imported.

        # Sights
        tourism=museum	museum
        tourism=gallery	museum
        tourism=zoo	attraction
        tourism=aquarium	attraction
        tourism=theme_park	attraction
        tourism=attraction	attraction
        tourism=artwork	attraction
        tourism=viewpoint	viewpoint

        # Lodging
        tourism=hotel	hotel
        tourism=motel	hotel
        tourism=guest_house	hotel
        tourism=apartment	hotel
        tourism=hostel	hostel

        # Food and drink
        amenity=restaurant	restaurant
        amenity=fast_food	restaurant
        amenity=food_court	restaurant
        amenity=cafe	cafe
        amenity=ice_cream	cafe
        amenity=bar	bar
        amenity=pub	bar
        amenity=biergarten	bar

        # Going out
        amenity=nightclub	nightlife
        amenity=casino	nightlife
        amenity=theatre	theatre
        amenity=cinema	theatre
        amenity=arts_centre	theatre
        amenity=concert_hall	theatre

        # Markets and shops
        amenity=marketplace	market
        shop=vacant	-
        shop=no	-
        shop=*	shopping

        # Outdoors
        leisure=park	park
        leisure=garden	park
        leisure=nature_reserve	park
        natural=beach	beach
        leisure=beach_resort	beach

        # Getting around
        amenity=bus_station	transport
        amenity=ferry_terminal	transport
        railway=station	transport
        public_transport=station	transport
        aeroway=aerodrome	transport

        # Churches and the historic last: a historic building often houses one of the above.
        amenity=place_of_worship	attraction
        historic=*	attraction
        """#
}
