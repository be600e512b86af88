//! Tests of [`super::address`]: each shortcut against std's parse and
//! `Display` on seeded addresses and edits of them.

use super::*;

fn prefix(v: &str, b4: u8, b6: u8) -> String {
    let mut s = String::new();
    write_prefix(v, b4, b6, &mut s).unwrap();
    s
}

#[test]
fn prefixes_of_both_families() {
    assert_eq!(prefix("10.1.2.3", 24, 64), "10.1.2.0/24");
    assert_eq!(prefix("10.1.2.3:5678", 32, 128), "10.1.2.3");
    assert_eq!(prefix("203.0.113.9, 10.0.0.1", 16, 64), "203.0.0.0/16");
    assert_eq!(prefix("2001:db8:1:2:3::4", 24, 64), "2001:db8:1:2::/64");
    assert_eq!(prefix("[2001:db8::1]:443", 24, 48), "2001:db8::/48");
    assert!(write_prefix("-", 24, 64, &mut String::new()).is_err());
}

#[test]
fn dotted_quads_are_their_own_key() {
    for v in [
        "0.0.0.0",
        "10.1.134.162",
        "255.255.255.255",
        "192.0.2.10",
        "1.22.199.249",
        "200.250.251.9",
    ] {
        assert!(is_dotted_quad(v), "{v}");
        assert_eq!(prefix(v, 32, 128), v);
    }
    // Written otherwise (or not an address): parsed and written again,
    // or refused, as before.
    for v in [
        "010.1.2.3",
        "1.2.3.256",
        "1.2.3",
        "1.2.3.4.5",
        "1.2.3.4:80",
        "1..3.4",
        " 1.2.3.4",
        "1.2.3.4,5.6.7.8",
        "300.1.1.1",
        "1.2.3.",
        "::1",
    ] {
        assert!(!is_dotted_quad(v), "{v}");
    }
}

#[test]
fn a_plain_key_is_what_the_general_path_writes() {
    // Values as logs write them (alone, with a port, in lists with and
    // without spaces, `unknown`, IPv6, brackets, leading zeros), under
    // every rule: where the shortcut answers, it is the general path's
    // answer.
    let pieces = [
        "10.1.2.3",
        "10.1.2.3:8080",
        "010.1.2.3",
        "255.255.255.255:0",
        "1.2.3.4:123456",
        "unknown",
        "2001:db8::5:8080",
        "[2001:db8::5]:443",
        "[1.2.3.4]:80",
        "::ffff:1.2.3.4",
        "2001:db8::5",
        "[2001:db8::5]",
        "2001:DB8::5",
        "2001:db8:0:0:1::1",
        "[::ffff:102:304]:80",
        "fe80::1%eth0",
        "-",
        "",
    ];
    let mut shortcuts = 0;
    for a in pieces {
        for b in pieces {
            for v in [
                a.to_string(),
                format!("{a}, {b}"),
                format!("{a},{b}"),
                format!(" {a} , {b} ,10.9.8.7"),
            ] {
                for port in [false, true] {
                    for xff in [
                        None,
                        Some(Xff::Last),
                        Some(Xff::First),
                        Some(Xff::TrustedHops(1)),
                        Some(Xff::TrustedHops(5)),
                    ] {
                        let rule = AddrRule { port, xff };
                        for (v6, b6) in [(false, 64), (true, 128)] {
                            let Some(fast) = plain_address(&v, rule, v6) else {
                                continue;
                            };
                            shortcuts += 1;
                            let mut out = String::new();
                            write_prefix_with(&v, 32, b6, rule, &mut out).unwrap();
                            assert_eq!(fast, out, "{v:?} under {rule:?}");
                        }
                    }
                }
            }
        }
    }
    assert!(shortcuts > 500, "{shortcuts}");
    // The IPv6 forms logs write take the shortcut with `ip`'s 128 bits.
    let (plain, port) = (
        AddrRule {
            port: false,
            xff: None,
        },
        AddrRule {
            port: true,
            xff: None,
        },
    );
    assert_eq!(
        plain_address("2001:db8::5", plain, true),
        Some("2001:db8::5")
    );
    assert_eq!(
        plain_address("[2001:db8::5]:443", plain, true),
        Some("2001:db8::5")
    );
    assert_eq!(
        plain_address("2001:db8::5:8080", port, true),
        Some("2001:db8::5")
    );
    assert_eq!(plain_address("2001:db8::5", plain, false), None);
}

#[test]
fn dotted_quad_is_exactly_what_ipv4_display_writes() {
    // Strings the check could meet (a seeded walk): half of them four
    // or so runs of digits joined by dots, the rest any of digits and
    // dots; a dotted quad exactly when the standard library reads it
    // as an address and writes it back the same.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let digits = b"0123456789012255";
    let mut quads = 0;
    for _ in 0..200_000 {
        let v: String = if next() % 2 == 0 {
            let parts = 3 + next() % 3;
            (0..parts)
                .map(|_| {
                    let len = 1 + next() % 4;
                    (0..len)
                        .map(|_| digits[(next() % 16) as usize] as char)
                        .collect::<String>()
                })
                .collect::<Vec<_>>()
                .join(".")
        } else {
            let len = 7 + next() % 9;
            (0..len)
                .map(|_| b"0123456789..25"[(next() % 14) as usize] as char)
                .collect()
        };
        let std = v
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|a| a.to_string() == v);
        assert_eq!(is_dotted_quad(&v), std, "{v}");
        quads += usize::from(std);
    }
    assert!(quads > 2_000, "only {quads} dotted quads met");
}

#[test]
fn canonical_v6_is_exactly_what_ipv6_display_writes() {
    // Addresses with zero groups in runs of every length and place
    // (written by `Display`, so each is canonical), then those strings
    // edited a byte at a time (a group upper-cased, padded, a colon
    // added or dropped, a run written out): the check says yes exactly
    // when the standard library reads the string as an address that
    // the key `ip` keeps IPv6 and writes it back the same.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let std = |v: &str| {
        v.parse::<std::net::Ipv6Addr>().is_ok_and(|a| {
            a.to_string() == v && matches!(IpAddr::V6(a).to_canonical(), IpAddr::V6(_))
        })
    };
    let (mut yes, mut edited) = (0, 0);
    for _ in 0..100_000 {
        let mut segs = [0u16; 8];
        for s in &mut segs {
            *s = match next() % 4 {
                0 | 1 => 0,
                2 => (next() % 16) as u16,
                _ => next() as u16,
            };
        }
        if next() % 16 == 0 {
            segs[..5].fill(0);
            segs[5] = 0xffff;
        }
        let v = std::net::Ipv6Addr::from(segs).to_string();
        assert_eq!(is_canonical_v6(&v), std(&v), "{v}");
        yes += usize::from(std(&v));
        let mut e = v.clone().into_bytes();
        let at = (next() % e.len() as u64) as usize;
        match next() % 5 {
            0 => e[at] = e[at].to_ascii_uppercase(),
            1 => e.insert(at, b'0'),
            2 => e.insert(at, b':'),
            3 => {
                e.remove(at);
            }
            _ => e = v.replacen("::", ":0:", 1).into_bytes(),
        }
        let e = String::from_utf8(e).unwrap();
        assert_eq!(is_canonical_v6(&e), std(&e), "{e} (from {v})");
        edited += usize::from(e != v && std(&e));
    }
    assert!(yes > 80_000, "only {yes} canonical");
    assert!(
        edited > 1_000,
        "only {edited} edited strings still canonical"
    );
    for v in ["::", "::1", "1::", "1:0:0:2::3", "1::2:0:0:3", "0:0:1::"] {
        assert_eq!(is_canonical_v6(v), std(v), "{v}");
    }
}

#[test]
fn v6_prints_as_display_does() {
    // Zero groups in runs of every length and place, IPv4-mapped and
    // -compatible addresses, masked prefixes.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..100_000 {
        let mut segs = [0u16; 8];
        for s in &mut segs {
            *s = match next() % 4 {
                0 | 1 => 0,
                2 => (next() % 16) as u16,
                _ => next() as u16,
            };
        }
        if i % 16 == 0 {
            segs[..5].fill(0);
            segs[5] = if i % 32 == 0 { 0xffff } else { 0 };
        }
        let a = std::net::Ipv6Addr::from(segs);
        let mut s = String::new();
        push_v6(a, &mut s);
        assert_eq!(s, a.to_string());
    }
    assert_eq!(prefix("2001:db8:1:2:3::4", 24, 64), "2001:db8:1:2::/64");
    assert_eq!(
        prefix("2001:0DB8:0:0:1:0:0:1", 24, 128),
        "2001:db8::1:0:0:1"
    );
}

#[test]
fn bytes_print_as_display_does() {
    for v in 0..=255u8 {
        let mut s = String::new();
        push_u8(v, &mut s);
        assert_eq!(s, v.to_string());
    }
}
