use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ListArray, RecordBatch, StringArray, StructArray};
use arrow_schema::{Field, Fields, Schema};

use super::*;

/// Three objects: two placements and a point; none and a line with a child; one placement,
/// closed, no geometry.
fn table() -> ObjectTable {
    let mut t = ObjectTable::new(95);
    t.id = vec![10, 11, 12];
    t.version = vec![1, 2, 3];
    t.start_date = vec![100, 200, 300];
    t.end_date = vec![OPEN_END, OPEN_END, 400];
    t.last_modified = vec![1_000, 2_000, 3_000];
    t.loc_offsets = vec![0, 2, 2, 3];
    t.loc_link = vec![7, 8, 9];
    t.loc_from = vec![0.0, 0.25, 0.5];
    t.loc_to = vec![0.1, 0.25, 1.0];
    t.loc_direction = vec![DIRECTION_WITH, DIRECTION_AGAINST, DIRECTION_WITH];
    t.loc_lanes = vec!["1#2".into(), "".into(), "1R1".into()];
    t.geom_offsets = vec![0, 1, 3, 3];
    t.geom_coords = vec![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]];
    t.child_offsets = vec![0, 0, 1, 1];
    t.child_type = vec![96];
    t.child_id = vec![99];
    t
}

fn batch(t: &ObjectTable) -> RecordBatch {
    let (arrays, kinds) = t.stored_arrays().unwrap();
    assert_eq!(kinds, ["Point Z", "LineString Z"]);
    RecordBatch::try_new(Arc::new(Schema::new(ObjectTable::stored_fields())), arrays).unwrap()
}

fn read(b: &RecordBatch) -> Result<ObjectTable, Box<dyn std::error::Error>> {
    let mut t = ObjectTable::new(95);
    t.append_batch(b)?;
    t.check_lengths()?;
    Ok(t)
}

fn same(a: &ObjectTable, b: &ObjectTable) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

#[test]
fn the_declared_schema_is_the_stored_one() {
    let names: Vec<String> = ObjectTable::stored_fields()
        .iter()
        .map(|f| format!("{}:{}:{}", f.name(), f.data_type(), f.is_nullable()))
        .collect();
    assert_eq!(
        names[..5],
        [
            "id:Int64:false",
            "version:Int32:false",
            "start_date:Date32:false",
            "end_date:Date32:true",
            "last_modified:Timestamp(s, \"UTC\"):false",
        ]
    );
    assert_eq!(names[7], "geometry:Binary:true");
    let deleted: Vec<String> = DeletedTable::stored_fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(deleted, ["type_id", "id", "version", "deleted_at"]);
}

#[test]
fn a_table_round_trips_through_a_record_batch() {
    let t = table();
    let back = read(&batch(&t)).unwrap();
    assert!(same(&back, &t), "{back:?}");
    // appended batches continue the offsets
    let mut twice = read(&batch(&t)).unwrap();
    twice.append_batch(&batch(&t)).unwrap();
    assert_eq!(twice.loc_offsets, [0, 2, 2, 3, 5, 5, 6]);
    assert_eq!(twice.geom_offsets, [0, 1, 3, 3, 4, 6, 6]);
    assert_eq!(twice.end_date[5], 400);
}

/// Reorder a list column's struct children (reversed).
fn reversed_children(list: &ArrayRef) -> ArrayRef {
    let list = list.as_list::<i32>();
    let items = list.values().as_struct();
    let fields: Vec<Arc<Field>> = items.fields().iter().rev().cloned().collect();
    let columns: Vec<ArrayRef> = items.columns().iter().rev().cloned().collect();
    let fields = Fields::from(fields);
    let items = StructArray::new(fields.clone(), columns, None);
    let item = Arc::new(Field::new(
        "item",
        arrow_schema::DataType::Struct(fields),
        false,
    ));
    Arc::new(ListArray::new(
        item,
        list.offsets().clone(),
        Arc::new(items),
        None,
    ))
}

#[test]
fn columns_and_struct_children_are_read_by_name() {
    let t = table();
    let b = batch(&t);
    let schema = b.schema();
    // columns in reverse order, and the struct children of each list reversed too
    let mut fields = Vec::new();
    let mut arrays = Vec::new();
    for (f, a) in schema.fields().iter().zip(b.columns()).rev() {
        let a = match a.data_type() {
            arrow_schema::DataType::List(_) => reversed_children(a),
            _ => a.clone(),
        };
        fields.push(Field::new(f.name(), a.data_type().clone(), f.is_nullable()));
        arrays.push(a);
    }
    let shuffled = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap();
    assert_eq!(shuffled.schema().field(0).name(), "geometry");
    let back = read(&shuffled).unwrap();
    assert!(same(&back, &t), "{back:?}");
}

/// The batch with the struct child `name` of `placements` removed.
fn without_item(b: &RecordBatch, name: &str) -> RecordBatch {
    let i = b.schema().index_of("placements").unwrap();
    let list = b.column(i).as_list::<i32>();
    let items = list.values().as_struct();
    let keep: Vec<usize> = (0..items.num_columns())
        .filter(|&c| items.fields()[c].name() != name)
        .collect();
    assert_eq!(keep.len() + 1, items.num_columns(), "no item {name}");
    let items = StructArray::new(
        Fields::from(
            keep.iter()
                .map(|&c| items.fields()[c].clone())
                .collect::<Vec<_>>(),
        ),
        keep.iter().map(|&c| items.column(c).clone()).collect(),
        None,
    );
    let item = Arc::new(Field::new("item", items.data_type().clone(), false));
    let short: ArrayRef = Arc::new(ListArray::new(
        item,
        list.offsets().clone(),
        Arc::new(items),
        None,
    ));
    let mut fields: Vec<Field> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields[i] = Field::new("placements", short.data_type().clone(), false);
    let mut arrays = b.columns().to_vec();
    arrays[i] = short;
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap()
}

/// Lanes are stored as a nullable text child (null = none); a file written before lanes
/// were kept (no such child) reads as placements without lanes.
#[test]
fn lanes_are_stored_and_an_older_file_without_them_reads_as_none() {
    let t = table();
    let b = batch(&t);
    let i = b.schema().index_of("placements").unwrap();
    let items = b.column(i).as_list::<i32>().values().as_struct().clone();
    let lanes = items.column_by_name("lanes").expect("a lanes child");
    let lanes = lanes.as_string::<i32>();
    assert_eq!(
        lanes.iter().collect::<Vec<_>>(),
        [Some("1#2"), None, Some("1R1")]
    );
    let old = read(&without_item(&b, "lanes")).unwrap();
    assert_eq!(old.loc_lanes, [Box::<str>::from(""), "".into(), "".into()]);
    let mut expected = t.clone();
    expected.loc_lanes = old.loc_lanes.clone();
    assert!(same(&old, &expected), "{old:?}");
    // an older batch appended after a newer one keeps the counts in step
    let mut both = read(&b).unwrap();
    both.append_batch(&without_item(&b, "lanes")).unwrap();
    both.check_stored_lengths().unwrap();
    assert_eq!(both.loc_lanes.len(), 6);
    assert_eq!(&*both.loc_lanes[0], "1#2");
    assert_eq!(&*both.loc_lanes[5], "");
}

#[test]
fn missing_or_mistyped_columns_are_named() {
    let b = batch(&table());
    let without = |name: &str| {
        let mut b = b.clone();
        let i = b.schema().index_of(name).unwrap();
        b.remove_column(i);
        b
    };
    assert_eq!(
        read(&without("version")).unwrap_err().to_string(),
        "missing column version"
    );
    // a list whose items lack a required field
    assert_eq!(
        read(&without_item(&b, "direction"))
            .unwrap_err()
            .to_string(),
        "placements items have no field direction"
    );
    // an id column of text
    let i = b.schema().index_of("id").unwrap();
    let mut fields: Vec<Field> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields[i] = Field::new("id", arrow_schema::DataType::Utf8, false);
    let mut arrays = b.columns().to_vec();
    arrays[i] = Arc::new(StringArray::from(vec!["a", "b", "c"]));
    let b3 = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap();
    assert_eq!(
        read(&b3).unwrap_err().to_string(),
        "column id has the wrong type"
    );
}

#[test]
fn slices_concatenate_back_to_the_table() {
    let mut t = table();
    t.properties.push(PropertyColumn {
        property_id: 5,
        values: Arc::new(arrow_array::Int64Array::from(vec![Some(1), None, Some(3)])),
    });
    for cut in 0..=t.len() {
        let (a, b) = (t.slice(0..cut), t.slice(cut..t.len()));
        a.check_lengths().unwrap();
        b.check_lengths().unwrap();
        let parts: Vec<ObjectTable> = [a, b].into_iter().filter(|p| !p.is_empty()).collect();
        let back = ObjectTable::concat(95, parts).unwrap();
        assert!(same(&back, &t), "cut {cut}: {back:?}");
    }
    // a slice rebases its offsets
    let s = t.slice(1..3);
    assert_eq!(s.loc_offsets, [0, 0, 1]);
    assert_eq!(s.loc_link, [9]);
    assert_eq!(s.geom_offsets, [0, 2, 2]);
    assert_eq!(s.child_id, [99]);
    assert_eq!(s.properties[0].values.null_count(), 1);
}

#[test]
fn inconsistent_groups_are_caught() {
    let mut t = table();
    t.loc_link.pop();
    assert_eq!(
        t.check_lengths().unwrap_err().to_string(),
        "type 95: placements.link_id has 2 items, expected 3"
    );
    let mut n = RoadNetwork::default();
    n.link_id.push(1);
    assert!(n
        .check_lengths()
        .unwrap_err()
        .to_string()
        .starts_with("road network: column from_pos has 0 rows, expected 1"));
}
