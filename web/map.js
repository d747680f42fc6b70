// The map: Leaflet (Debian's libjs-leaflet, served at /vendor/leaflet/) over the configured
// background tiles. Places are markers whether or not the tiles load.

/* global L */

export const sydney = { lat: -33.8688, lon: 151.2093 };

export class PlaceMap {
  constructor(element, tiles) {
    this.map = L.map(element, { zoomControl: true }).setView([sydney.lat, sydney.lon], 13);
    L.tileLayer(tiles.url, { attribution: tiles.attribution, maxZoom: 19 }).addTo(this.map);
    this.markers = L.layerGroup().addTo(this.map);
    this.me = null;
  }

  /// Shows `places` (with lat, lon, name, id) as markers linking to their pages (unless
  /// `link` is false: annotations); fits the view to them unless told not to.
  show(places, { fit = true, link = true } = {}) {
    this.markers.clearLayers();
    const points = [];
    for (const place of places) {
      const marker = L.marker([place.lat, place.lon], { title: place.name, alt: place.name, keyboard: true });
      // The popup is built from nodes: a name is text, never HTML.
      const label = document.createElement(link ? "a" : "span");
      if (link) label.href = `#/place/${place.id}`;
      label.textContent = place.name;
      marker.bindPopup(label);
      if (link) marker.on("click", () => (location.hash = `#/place/${place.id}`));
      marker.addTo(this.markers);
      points.push([place.lat, place.lon]);
    }
    if (fit && points.length > 1) this.map.fitBounds(points, { padding: [24, 24], maxZoom: 16 });
    else if (fit && points.length === 1) this.map.setView(points[0], 16);
  }

  /// The user's position, as a circle.
  showMe(position) {
    if (!position) return;
    if (!this.me) this.me = L.circleMarker([position.lat, position.lon], { radius: 7, color: "#1565c0", fillOpacity: 0.8 }).addTo(this.map);
    else this.me.setLatLng([position.lat, position.lon]);
  }

  /// The box in view, as search.viewport takes it.
  bbox() {
    const b = this.map.getBounds();
    return { south: b.getSouth(), west: b.getWest(), north: b.getNorth(), east: b.getEast() };
  }

  onMoved(handler) {
    this.map.on("moveend", handler);
  }

  resize() {
    this.map.invalidateSize();
  }
}
