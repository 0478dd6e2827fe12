//! Mapbox Vector Tile 2.1 encoding. The messages are those of `vector_tile.proto` of the
//! specification (github.com/mapbox/vector-tile-spec, `2.1/vector_tile.proto`, proto2, package
//! `vector_tile`), written as prost messages with the same field numbers, labels and packing
//! (the extension ranges are left out). `LayerBuilder` interns keys and values and writes the
//! geometry commands (MoveTo / LineTo / ClosePath with zig-zag deltas).

use std::collections::HashMap;

use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct Tile {
    #[prost(message, repeated, tag = "3")]
    pub layers: Vec<Layer>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Value {
    #[prost(string, optional, tag = "1")]
    pub string_value: Option<String>,
    #[prost(float, optional, tag = "2")]
    pub float_value: Option<f32>,
    #[prost(double, optional, tag = "3")]
    pub double_value: Option<f64>,
    #[prost(int64, optional, tag = "4")]
    pub int_value: Option<i64>,
    #[prost(uint64, optional, tag = "5")]
    pub uint_value: Option<u64>,
    #[prost(sint64, optional, tag = "6")]
    pub sint_value: Option<i64>,
    #[prost(bool, optional, tag = "7")]
    pub bool_value: Option<bool>,
}

/// `Tile.GeomType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum GeomType {
    Unknown = 0,
    Point = 1,
    Linestring = 2,
    Polygon = 3,
}

#[derive(Clone, PartialEq, Message)]
pub struct Feature {
    #[prost(uint64, optional, tag = "1", default = "0")]
    pub id: Option<u64>,
    #[prost(uint32, repeated, tag = "2")]
    pub tags: Vec<u32>,
    #[prost(enumeration = "GeomType", optional, tag = "3", default = "Unknown")]
    pub r#type: Option<i32>,
    #[prost(uint32, repeated, tag = "4")]
    pub geometry: Vec<u32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Layer {
    #[prost(uint32, required, tag = "15", default = "1")]
    pub version: u32,
    #[prost(string, required, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "2")]
    pub features: Vec<Feature>,
    #[prost(string, repeated, tag = "3")]
    pub keys: Vec<String>,
    #[prost(message, repeated, tag = "4")]
    pub values: Vec<Value>,
    #[prost(uint32, optional, tag = "5", default = "4096")]
    pub extent: Option<u32>,
}

/// A property value as it goes into a layer.
#[derive(Debug, Clone, PartialEq)]
pub enum Prop {
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

/// Interning key for values (floats by their bits).
#[derive(PartialEq, Eq, Hash)]
enum ValueKey {
    Text(String),
    Int(i64),
    Float(u64),
    Bool(bool),
}

/// Geometry of one feature in integer layer units.
pub enum Geometry<'a> {
    Points(&'a [(i32, i32)]),
    Lines(&'a [Vec<(i32, i32)>]),
    /// Rings in order: each exterior (positive area) followed by its holes (negative area).
    Polygon(&'a [Vec<(i32, i32)>]),
}

fn command(id: u32, count: usize) -> u32 {
    (id & 7) | ((count as u32) << 3)
}

fn zigzag(n: i32) -> u32 {
    ((n << 1) ^ (n >> 31)) as u32
}

/// Builds one layer.
pub struct LayerBuilder {
    layer: Layer,
    keys: HashMap<String, u32>,
    values: HashMap<ValueKey, u32>,
}

impl LayerBuilder {
    pub fn new(name: &str, extent: u32) -> LayerBuilder {
        LayerBuilder {
            layer: Layer {
                version: 2,
                name: name.to_string(),
                features: Vec::new(),
                keys: Vec::new(),
                values: Vec::new(),
                extent: Some(extent),
            },
            keys: HashMap::new(),
            values: HashMap::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.layer.features.is_empty()
    }

    pub fn len(&self) -> usize {
        self.layer.features.len()
    }

    fn key(&mut self, k: &str) -> u32 {
        if let Some(&i) = self.keys.get(k) {
            return i;
        }
        let i = self.layer.keys.len() as u32;
        self.layer.keys.push(k.to_string());
        self.keys.insert(k.to_string(), i);
        i
    }

    fn value(&mut self, v: &Prop) -> u32 {
        let key = match v {
            Prop::Text(s) => ValueKey::Text(s.clone()),
            Prop::Int(i) => ValueKey::Int(*i),
            Prop::Float(f) => ValueKey::Float(f.to_bits()),
            Prop::Bool(b) => ValueKey::Bool(*b),
        };
        if let Some(&i) = self.values.get(&key) {
            return i;
        }
        let i = self.layer.values.len() as u32;
        let mut value = Value::default();
        match v {
            Prop::Text(s) => value.string_value = Some(s.clone()),
            Prop::Int(n) if *n >= 0 => value.uint_value = Some(*n as u64),
            Prop::Int(n) => value.sint_value = Some(*n),
            Prop::Float(f) => value.double_value = Some(*f),
            Prop::Bool(b) => value.bool_value = Some(*b),
        }
        self.layer.values.push(value);
        self.values.insert(key, i);
        i
    }

    /// Add a feature. Geometry parts with too few points must have been removed by the caller.
    pub fn add(&mut self, id: Option<u64>, props: &[(&str, Prop)], geometry: Geometry<'_>) {
        let mut tags = Vec::with_capacity(props.len() * 2);
        for (k, v) in props {
            let k = self.key(k);
            let v = self.value(v);
            tags.push(k);
            tags.push(v);
        }
        let mut cmds = Vec::new();
        let mut cursor = (0i32, 0i32);
        let mut delta = |cmds: &mut Vec<u32>, p: (i32, i32)| {
            cmds.push(zigzag(p.0 - cursor.0));
            cmds.push(zigzag(p.1 - cursor.1));
            cursor = p;
        };
        let kind = match geometry {
            Geometry::Points(points) => {
                cmds.push(command(1, points.len()));
                for &p in points {
                    delta(&mut cmds, p);
                }
                GeomType::Point
            }
            Geometry::Lines(lines) => {
                for line in lines {
                    cmds.push(command(1, 1));
                    delta(&mut cmds, line[0]);
                    cmds.push(command(2, line.len() - 1));
                    for &p in &line[1..] {
                        delta(&mut cmds, p);
                    }
                }
                GeomType::Linestring
            }
            Geometry::Polygon(rings) => {
                for ring in rings {
                    cmds.push(command(1, 1));
                    delta(&mut cmds, ring[0]);
                    cmds.push(command(2, ring.len() - 1));
                    for &p in &ring[1..] {
                        delta(&mut cmds, p);
                    }
                    cmds.push(command(7, 1));
                }
                GeomType::Polygon
            }
        };
        self.layer.features.push(Feature {
            id,
            tags,
            r#type: Some(kind as i32),
            geometry: cmds,
        });
    }

    pub fn finish(self) -> Layer {
        self.layer
    }
}

/// The encoded tile of some layers (empty layers left out).
pub fn encode(layers: Vec<Layer>) -> Vec<u8> {
    Tile {
        layers: layers
            .into_iter()
            .filter(|l| !l.features.is_empty())
            .collect(),
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the specification (4.3.5, "Example Multi Point" and "Example
    /// Linestring"): a line through (2,2) (2,10) (10,10) is `[9, 4, 4, 18, 0, 16, 16, 0]`.
    #[test]
    fn geometry_commands_match_the_specification_examples() {
        let mut b = LayerBuilder::new("x", 4096);
        b.add(
            None,
            &[],
            Geometry::Lines(&[vec![(2, 2), (2, 10), (10, 10)]]),
        );
        b.add(None, &[], Geometry::Points(&[(5, 7), (3, 2)]));
        let l = b.finish();
        assert_eq!(l.features[0].geometry, vec![9, 4, 4, 18, 0, 16, 16, 0]);
        assert_eq!(l.features[1].geometry, vec![17, 10, 14, 3, 9]);
    }

    #[test]
    fn keys_and_values_are_interned() {
        let mut b = LayerBuilder::new("x", 4096);
        for _ in 0..3 {
            b.add(
                Some(1),
                &[("a", Prop::Int(1)), ("b", Prop::Text("t".into()))],
                Geometry::Points(&[(0, 0)]),
            );
        }
        let l = b.finish();
        assert_eq!(l.keys.len(), 2);
        assert_eq!(l.values.len(), 2);
        assert_eq!(l.features[2].tags, vec![0, 0, 1, 1]);
    }
}
