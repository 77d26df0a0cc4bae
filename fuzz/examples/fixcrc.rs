fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mut b = std::fs::read(&a[1]).unwrap();
    nc3pack_fuzz::fix_crcs(&mut b);
    std::fs::write(&a[2], b).unwrap();
}
