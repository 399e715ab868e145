//! robfig/cron v3.0.1's `parser_test.go`, `spec_test.go` and `constantdelay_test.go`, row by
//! row. Go's tests run in the machine's `time.Local`; here "local" times are UTC, which a
//! schedule without a zone treats as its own zone exactly as Go treats `time.Local`.

use super::*;
use k8s_openapi::jiff::civil;
use k8s_openapi::jiff::tz::{Offset, TimeZone};

fn second_parser() -> Parser {
    Parser::new(SECOND | MINUTE | HOUR | DOM | MONTH | DOW_OPTIONAL | DESCRIPTOR)
}

fn tz(name: &str) -> TimeZone {
    match load_location(name) {
        Ok(Location::Zone(z)) => z,
        other => panic!("zone {name}: {other:?}"),
    }
}

fn month_number(name: &str) -> i8 {
    let names = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    names.iter().position(|n| *n == name).map(|i| i8::try_from(i + 1).unwrap()).unwrap()
}

/// `getTime` of spec_test.go: `Mon Jan 2 15:04[:05[.fff]] 2006` in "local" (UTC), or
/// `2006-01-02T15:04:05-0700`, optionally after `TZ=<zone> ` (the zone the time is shown in;
/// without it a time with an offset is in a fixed zone).
fn get_time(value: &str) -> Option<Zoned> {
    if value.is_empty() {
        return None;
    }
    let (zone, value) = match value.strip_prefix("TZ=") {
        Some(rest) => {
            let (name, v) = rest.split_once(' ').unwrap();
            (Some(tz(name)), v)
        }
        None => (None, value),
    };
    let parts: Vec<&str> = value.split_whitespace().collect();
    if parts.len() == 5 {
        let day: i8 = parts[2].parse().unwrap();
        let year: i16 = parts[4].parse().unwrap();
        let hms: Vec<&str> = parts[3].split(':').collect();
        let (sec, nanos) = match hms.get(2) {
            Some(s) => match s.split_once('.') {
                Some((s, frac)) => (s.parse().unwrap(), format!("{frac:0<9}").parse().unwrap()),
                None => (s.parse().unwrap(), 0),
            },
            None => (0, 0),
        };
        let dt = civil::date(year, month_number(parts[1]), day).at(
            hms[0].parse().unwrap(),
            hms[1].parse().unwrap(),
            sec,
            nanos,
        );
        return Some(dt.to_zoned(zone.unwrap_or(TimeZone::UTC)).unwrap());
    }
    let (dt, off) = value.split_at(value.len() - 5);
    let dt: civil::DateTime = dt.parse().unwrap();
    let sign = if off.starts_with('-') { -1 } else { 1 };
    let secs = sign * (off[1..3].parse::<i32>().unwrap() * 3600 + off[3..5].parse::<i32>().unwrap() * 60);
    let offset = Offset::from_seconds(secs).unwrap();
    let ts = dt.to_zoned(TimeZone::fixed(offset)).unwrap().timestamp();
    Some(ts.to_zoned(zone.unwrap_or(TimeZone::fixed(offset))))
}

fn every5min(loc: Location) -> Schedule {
    Schedule::Spec(SpecSchedule {
        second: 1,
        minute: 1 << 5,
        hour: all(HOURS),
        dom: all(DAYS_OF_MONTH),
        month: all(MONTHS),
        dow: all(DAYS_OF_WEEK),
        location: loc,
    })
}

fn every5min5s(loc: Location) -> Schedule {
    Schedule::Spec(SpecSchedule {
        second: 1 << 5,
        minute: 1 << 5,
        hour: all(HOURS),
        dom: all(DAYS_OF_MONTH),
        month: all(MONTHS),
        dow: all(DAYS_OF_WEEK),
        location: loc,
    })
}

fn midnight(loc: Location) -> Schedule {
    Schedule::Spec(SpecSchedule {
        second: 1,
        minute: 1,
        hour: 1,
        dom: all(DAYS_OF_MONTH),
        month: all(MONTHS),
        dow: all(DAYS_OF_WEEK),
        location: loc,
    })
}

fn annual(loc: Location) -> Schedule {
    Schedule::Spec(SpecSchedule {
        second: 1 << SECONDS.min,
        minute: 1 << MINUTES.min,
        hour: 1 << HOURS.min,
        dom: 1 << DAYS_OF_MONTH.min,
        month: 1 << MONTHS.min,
        dow: all(DAYS_OF_WEEK),
        location: loc,
    })
}

fn bounds(min: u64, max: u64) -> Bounds {
    Bounds { min, max, names: &[] }
}

#[test]
fn range() {
    let rows: &[(&str, u64, u64, u64, &str)] = &[
        ("5", 0, 7, 1 << 5, ""),
        ("0", 0, 7, 1 << 0, ""),
        ("7", 0, 7, 1 << 7, ""),
        ("5-5", 0, 7, 1 << 5, ""),
        ("5-6", 0, 7, 1 << 5 | 1 << 6, ""),
        ("5-7", 0, 7, 1 << 5 | 1 << 6 | 1 << 7, ""),
        ("5-6/2", 0, 7, 1 << 5, ""),
        ("5-7/2", 0, 7, 1 << 5 | 1 << 7, ""),
        ("5-7/1", 0, 7, 1 << 5 | 1 << 6 | 1 << 7, ""),
        ("*", 1, 3, 1 << 1 | 1 << 2 | 1 << 3 | STAR_BIT, ""),
        ("*/2", 1, 3, 1 << 1 | 1 << 3, ""),
        ("5--5", 0, 0, 0, "too many hyphens"),
        ("jan-x", 0, 0, 0, "failed to parse int from"),
        ("2-x", 1, 5, 0, "failed to parse int from"),
        ("*/-12", 0, 0, 0, "negative number"),
        ("*//2", 0, 0, 0, "too many slashes"),
        ("1", 3, 5, 0, "below minimum"),
        ("6", 3, 5, 0, "above maximum"),
        ("5-3", 3, 5, 0, "beyond end of range"),
        ("*/0", 0, 0, 0, "should be a positive number"),
    ];
    for (expr, min, max, expected, err) in rows {
        let got = get_range(expr, bounds(*min, *max));
        if err.is_empty() {
            assert_eq!(got, Ok(*expected), "{expr}");
        } else {
            let e = got.expect_err(expr);
            assert!(e.contains(err), "{expr}: {e}");
        }
    }
}

#[test]
fn field() {
    let rows: &[(&str, u64, u64, u64)] = &[
        ("5", 1, 7, 1 << 5),
        ("5,6", 1, 7, 1 << 5 | 1 << 6),
        ("5,6,7", 1, 7, 1 << 5 | 1 << 6 | 1 << 7),
        ("1,5-7/2,3", 1, 7, 1 << 1 | 1 << 5 | 1 << 7 | 1 << 3),
    ];
    for (expr, min, max, expected) in rows {
        assert_eq!(get_field(expr, bounds(*min, *max)), Ok(*expected), "{expr}");
    }
}

#[test]
fn all_bits() {
    let rows = [
        (MINUTES, 0xfff_ffff_ffff_ffff_u64),
        (HOURS, 0xff_ffff),
        (DAYS_OF_MONTH, 0xffff_fffe),
        (MONTHS, 0x1ffe),
        (DAYS_OF_WEEK, 0x7f),
    ];
    for (r, expected) in rows {
        assert_eq!(all(r), expected | STAR_BIT, "{r:?}");
    }
}

#[test]
fn bits() {
    for (min, max, step, expected) in [(0, 0, 1, 0x1), (1, 1, 1, 0x2), (1, 5, 2, 0x2a), (1, 4, 2, 0xa)] {
        assert_eq!(get_bits(min, max, step), expected, "{min}-{max}/{step}");
    }
}

#[test]
fn parse_schedule_errors() {
    let rows = [
        ("* 5 j * * *", "failed to parse int from"),
        ("@every Xm", "failed to parse duration"),
        ("@unrecognized", "unrecognized descriptor"),
        ("* * * *", "expected 5 to 6 fields"),
        ("", "empty spec string"),
    ];
    for (expr, err) in rows {
        let e = second_parser().parse(expr).expect_err(expr);
        assert!(e.contains(err), "{expr}: {e}");
    }
}

#[test]
fn parse_schedule() {
    let tokyo = || Location::Zone(tz("Asia/Tokyo"));
    let utc = || Location::Zone(TimeZone::UTC);
    let sp = second_parser();
    let rows = [
        (sp, "0 5 * * * *", every5min(Location::Local)),
        (STANDARD, "5 * * * *", every5min(Location::Local)),
        (sp, "CRON_TZ=UTC  0 5 * * * *", every5min(utc())),
        (STANDARD, "CRON_TZ=UTC  5 * * * *", every5min(utc())),
        (sp, "CRON_TZ=Asia/Tokyo 0 5 * * * *", every5min(tokyo())),
        (sp, "@every 5m", Schedule::Every { delay_seconds: 300 }),
        (sp, "@midnight", midnight(Location::Local)),
        (sp, "TZ=UTC  @midnight", midnight(utc())),
        (sp, "TZ=Asia/Tokyo @midnight", midnight(tokyo())),
        (sp, "@yearly", annual(Location::Local)),
        (sp, "@annually", annual(Location::Local)),
        (
            sp,
            "* 5 * * * *",
            Schedule::Spec(SpecSchedule {
                second: all(SECONDS),
                minute: 1 << 5,
                hour: all(HOURS),
                dom: all(DAYS_OF_MONTH),
                month: all(MONTHS),
                dow: all(DAYS_OF_WEEK),
                location: Location::Local,
            }),
        ),
    ];
    for (parser, expr, expected) in rows {
        assert_eq!(parser.parse(expr), Ok(expected), "{expr}");
    }
}

#[test]
fn optional_second_schedule() {
    let parser = Parser::new(SECOND_OPTIONAL | MINUTE | HOUR | DOM | MONTH | DOW | DESCRIPTOR);
    let rows = [
        ("0 5 * * * *", every5min(Location::Local)),
        ("5 5 * * * *", every5min5s(Location::Local)),
        ("5 * * * *", every5min(Location::Local)),
    ];
    for (expr, expected) in rows {
        assert_eq!(parser.parse(expr), Ok(expected), "{expr}");
    }
}

#[test]
fn normalize_fields_rows() {
    let full = SECOND | MINUTE | HOUR | DOM | MONTH | DOW | DESCRIPTOR;
    let sec_opt = SECOND_OPTIONAL | MINUTE | HOUR | DOM | MONTH | DOW | DESCRIPTOR;
    let rows: &[(&str, &[&str], u32, &[&str])] = &[
        ("AllFields_NoOptional", &["0", "5", "*", "*", "*", "*"], full, &["0", "5", "*", "*", "*", "*"]),
        (
            "AllFields_SecondOptional_Provided",
            &["0", "5", "*", "*", "*", "*"],
            sec_opt,
            &["0", "5", "*", "*", "*", "*"],
        ),
        ("AllFields_SecondOptional_NotProvided", &["5", "*", "*", "*", "*"], sec_opt, &["0", "5", "*", "*", "*", "*"]),
        ("SubsetFields_NoOptional", &["5", "15", "*"], HOUR | DOM | MONTH, &["0", "0", "5", "15", "*", "*"]),
        (
            "SubsetFields_DowOptional_Provided",
            &["5", "15", "*", "4"],
            HOUR | DOM | MONTH | DOW_OPTIONAL,
            &["0", "0", "5", "15", "*", "4"],
        ),
        (
            "SubsetFields_DowOptional_NotProvided",
            &["5", "15", "*"],
            HOUR | DOM | MONTH | DOW_OPTIONAL,
            &["0", "0", "5", "15", "*", "*"],
        ),
        (
            "SubsetFields_SecondOptional_NotProvided",
            &["5", "15", "*"],
            SECOND_OPTIONAL | HOUR | DOM | MONTH,
            &["0", "0", "5", "15", "*", "*"],
        ),
    ];
    for (name, input, options, expected) in rows {
        let expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        assert_eq!(normalize_fields(input, *options), Ok(expected), "{name}");
    }
}

#[test]
fn normalize_fields_errors() {
    let rows: &[(&str, &[&str], u32)] = &[
        ("TwoOptionals", &["0", "5", "*", "*", "*", "*"], SECOND_OPTIONAL | MINUTE | HOUR | DOM | MONTH | DOW_OPTIONAL),
        ("TooManyFields", &["0", "5", "*", "*"], SECOND_OPTIONAL | MINUTE | HOUR),
        ("NoFields", &[], SECOND_OPTIONAL | MINUTE | HOUR),
        ("TooFewFields", &["*"], SECOND_OPTIONAL | MINUTE | HOUR),
    ];
    for (name, input, options) in rows {
        assert!(normalize_fields(input, *options).is_err(), "{name}");
    }
}

#[test]
fn standard_spec_schedule() {
    assert_eq!(
        parse_standard("5 * * * *"),
        Ok(Schedule::Spec(SpecSchedule {
            second: 1 << SECONDS.min,
            minute: 1 << 5,
            hour: all(HOURS),
            dom: all(DAYS_OF_MONTH),
            month: all(MONTHS),
            dow: all(DAYS_OF_WEEK),
            location: Location::Local,
        }))
    );
    assert_eq!(parse_standard("@every 5m"), Ok(Schedule::Every { delay_seconds: 300 }));
    let e = parse_standard("5 j * * *").unwrap_err();
    assert!(e.contains("failed to parse int from"), "{e}");
    assert_eq!(e, "failed to parse int from j: strconv.Atoi: parsing \"j\": invalid syntax");
    let e = parse_standard("* * * *").unwrap_err();
    assert_eq!(e, "expected exactly 5 fields, found 4: [* * * *]");
}

#[test]
fn no_descriptor_parser() {
    assert!(Parser::new(MINUTE | HOUR).parse("@every 1m").is_err());
}

#[test]
fn activation() {
    let rows = [
        // Every fifteen minutes.
        ("Mon Jul 9 15:00 2012", "0/15 * * * *", true),
        ("Mon Jul 9 15:45 2012", "0/15 * * * *", true),
        ("Mon Jul 9 15:40 2012", "0/15 * * * *", false),
        // Every fifteen minutes, starting at 5 minutes.
        ("Mon Jul 9 15:05 2012", "5/15 * * * *", true),
        ("Mon Jul 9 15:20 2012", "5/15 * * * *", true),
        ("Mon Jul 9 15:50 2012", "5/15 * * * *", true),
        // Named months
        ("Sun Jul 15 15:00 2012", "0/15 * * Jul *", true),
        ("Sun Jul 15 15:00 2012", "0/15 * * Jun *", false),
        // Everything set.
        ("Sun Jul 15 08:30 2012", "30 08 ? Jul Sun", true),
        ("Sun Jul 15 08:30 2012", "30 08 15 Jul ?", true),
        ("Mon Jul 16 08:30 2012", "30 08 ? Jul Sun", false),
        ("Mon Jul 16 08:30 2012", "30 08 15 Jul ?", false),
        // Predefined schedules
        ("Mon Jul 9 15:00 2012", "@hourly", true),
        ("Mon Jul 9 15:04 2012", "@hourly", false),
        ("Mon Jul 9 15:00 2012", "@daily", false),
        ("Mon Jul 9 00:00 2012", "@daily", true),
        ("Mon Jul 9 00:00 2012", "@weekly", false),
        ("Sun Jul 8 00:00 2012", "@weekly", true),
        ("Sun Jul 8 01:00 2012", "@weekly", false),
        ("Sun Jul 8 00:00 2012", "@monthly", false),
        ("Sun Jul 1 00:00 2012", "@monthly", true),
        // Test interaction of DOW and DOM.
        // If both are restricted, then only one needs to match.
        ("Sun Jul 15 00:00 2012", "* * 1,15 * Sun", true),
        ("Fri Jun 15 00:00 2012", "* * 1,15 * Sun", true),
        ("Wed Aug 1 00:00 2012", "* * 1,15 * Sun", true),
        ("Sun Jul 15 00:00 2012", "* * */10 * Sun", true), // verifies #70
        // However, if one has a star, then both need to match.
        ("Sun Jul 15 00:00 2012", "* * * * Mon", false),
        ("Mon Jul 9 00:00 2012", "* * 1,15 * *", false),
        ("Sun Jul 15 00:00 2012", "* * 1,15 * *", true),
        ("Sun Jul 15 00:00 2012", "* * */2 * Sun", true),
    ];
    for (time, spec, expected) in rows {
        let sched = parse_standard(spec).unwrap();
        let at = get_time(time).unwrap();
        let before = at.timestamp().checked_sub(k8s_openapi::jiff::SignedDuration::from_secs(1)).unwrap();
        let actual = sched.next(&before.to_zoned(at.time_zone().clone())).map(|z| z.timestamp());
        assert_eq!(actual == Some(at.timestamp()), expected, "{spec} on {time}: {actual:?}");
    }
}

#[test]
fn next() {
    let rows = [
        // Simple cases
        ("Mon Jul 9 14:45 2012", "0 0/15 * * * *", "Mon Jul 9 15:00 2012"),
        ("Mon Jul 9 14:59 2012", "0 0/15 * * * *", "Mon Jul 9 15:00 2012"),
        ("Mon Jul 9 14:59:59 2012", "0 0/15 * * * *", "Mon Jul 9 15:00 2012"),
        // Wrap around hours
        ("Mon Jul 9 15:45 2012", "0 20-35/15 * * * *", "Mon Jul 9 16:20 2012"),
        // Wrap around days
        ("Mon Jul 9 23:46 2012", "0 */15 * * * *", "Tue Jul 10 00:00 2012"),
        ("Mon Jul 9 23:45 2012", "0 20-35/15 * * * *", "Tue Jul 10 00:20 2012"),
        ("Mon Jul 9 23:35:51 2012", "15/35 20-35/15 * * * *", "Tue Jul 10 00:20:15 2012"),
        ("Mon Jul 9 23:35:51 2012", "15/35 20-35/15 1/2 * * *", "Tue Jul 10 01:20:15 2012"),
        ("Mon Jul 9 23:35:51 2012", "15/35 20-35/15 10-12 * * *", "Tue Jul 10 10:20:15 2012"),
        ("Mon Jul 9 23:35:51 2012", "15/35 20-35/15 1/2 */2 * *", "Thu Jul 11 01:20:15 2012"),
        ("Mon Jul 9 23:35:51 2012", "15/35 20-35/15 * 9-20 * *", "Wed Jul 10 00:20:15 2012"),
        ("Mon Jul 9 23:35:51 2012", "15/35 20-35/15 * 9-20 Jul *", "Wed Jul 10 00:20:15 2012"),
        // Wrap around months
        ("Mon Jul 9 23:35 2012", "0 0 0 9 Apr-Oct ?", "Thu Aug 9 00:00 2012"),
        ("Mon Jul 9 23:35 2012", "0 0 0 */5 Apr,Aug,Oct Mon", "Tue Aug 1 00:00 2012"),
        ("Mon Jul 9 23:35 2012", "0 0 0 */5 Oct Mon", "Mon Oct 1 00:00 2012"),
        // Wrap around years
        ("Mon Jul 9 23:35 2012", "0 0 0 * Feb Mon", "Mon Feb 4 00:00 2013"),
        ("Mon Jul 9 23:35 2012", "0 0 0 * Feb Mon/2", "Fri Feb 1 00:00 2013"),
        // Wrap around minute, hour, day, month, and year
        ("Mon Dec 31 23:59:45 2012", "0 * * * * *", "Tue Jan 1 00:00:00 2013"),
        // Leap year
        ("Mon Jul 9 23:35 2012", "0 0 0 29 Feb ?", "Mon Feb 29 00:00 2016"),
        // Daylight savings time 2am EST (-5) -> 3am EDT (-4)
        ("2012-03-11T00:00:00-0500", "TZ=America/New_York 0 30 2 11 Mar ?", "2013-03-11T02:30:00-0400"),
        // hourly job
        ("2012-03-11T00:00:00-0500", "TZ=America/New_York 0 0 * * * ?", "2012-03-11T01:00:00-0500"),
        ("2012-03-11T01:00:00-0500", "TZ=America/New_York 0 0 * * * ?", "2012-03-11T03:00:00-0400"),
        ("2012-03-11T03:00:00-0400", "TZ=America/New_York 0 0 * * * ?", "2012-03-11T04:00:00-0400"),
        ("2012-03-11T04:00:00-0400", "TZ=America/New_York 0 0 * * * ?", "2012-03-11T05:00:00-0400"),
        // hourly job using CRON_TZ
        ("2012-03-11T00:00:00-0500", "CRON_TZ=America/New_York 0 0 * * * ?", "2012-03-11T01:00:00-0500"),
        ("2012-03-11T01:00:00-0500", "CRON_TZ=America/New_York 0 0 * * * ?", "2012-03-11T03:00:00-0400"),
        ("2012-03-11T03:00:00-0400", "CRON_TZ=America/New_York 0 0 * * * ?", "2012-03-11T04:00:00-0400"),
        ("2012-03-11T04:00:00-0400", "CRON_TZ=America/New_York 0 0 * * * ?", "2012-03-11T05:00:00-0400"),
        // 1am nightly job
        ("2012-03-11T00:00:00-0500", "TZ=America/New_York 0 0 1 * * ?", "2012-03-11T01:00:00-0500"),
        ("2012-03-11T01:00:00-0500", "TZ=America/New_York 0 0 1 * * ?", "2012-03-12T01:00:00-0400"),
        // 2am nightly job (skipped)
        ("2012-03-11T00:00:00-0500", "TZ=America/New_York 0 0 2 * * ?", "2012-03-12T02:00:00-0400"),
        // Daylight savings time 2am EDT (-4) => 1am EST (-5)
        ("2012-11-04T00:00:00-0400", "TZ=America/New_York 0 30 2 04 Nov ?", "2012-11-04T02:30:00-0500"),
        ("2012-11-04T01:45:00-0400", "TZ=America/New_York 0 30 1 04 Nov ?", "2012-11-04T01:30:00-0500"),
        // hourly job
        ("2012-11-04T00:00:00-0400", "TZ=America/New_York 0 0 * * * ?", "2012-11-04T01:00:00-0400"),
        ("2012-11-04T01:00:00-0400", "TZ=America/New_York 0 0 * * * ?", "2012-11-04T01:00:00-0500"),
        ("2012-11-04T01:00:00-0500", "TZ=America/New_York 0 0 * * * ?", "2012-11-04T02:00:00-0500"),
        // 1am nightly job (runs twice)
        ("2012-11-04T00:00:00-0400", "TZ=America/New_York 0 0 1 * * ?", "2012-11-04T01:00:00-0400"),
        ("2012-11-04T01:00:00-0400", "TZ=America/New_York 0 0 1 * * ?", "2012-11-04T01:00:00-0500"),
        ("2012-11-04T01:00:00-0500", "TZ=America/New_York 0 0 1 * * ?", "2012-11-05T01:00:00-0500"),
        // 2am nightly job
        ("2012-11-04T00:00:00-0400", "TZ=America/New_York 0 0 2 * * ?", "2012-11-04T02:00:00-0500"),
        ("2012-11-04T02:00:00-0500", "TZ=America/New_York 0 0 2 * * ?", "2012-11-05T02:00:00-0500"),
        // 3am nightly job
        ("2012-11-04T00:00:00-0400", "TZ=America/New_York 0 0 3 * * ?", "2012-11-04T03:00:00-0500"),
        ("2012-11-04T03:00:00-0500", "TZ=America/New_York 0 0 3 * * ?", "2012-11-05T03:00:00-0500"),
        // hourly job
        ("TZ=America/New_York 2012-11-04T00:00:00-0400", "0 0 * * * ?", "2012-11-04T01:00:00-0400"),
        ("TZ=America/New_York 2012-11-04T01:00:00-0400", "0 0 * * * ?", "2012-11-04T01:00:00-0500"),
        ("TZ=America/New_York 2012-11-04T01:00:00-0500", "0 0 * * * ?", "2012-11-04T02:00:00-0500"),
        // 1am nightly job (runs twice)
        ("TZ=America/New_York 2012-11-04T00:00:00-0400", "0 0 1 * * ?", "2012-11-04T01:00:00-0400"),
        ("TZ=America/New_York 2012-11-04T01:00:00-0400", "0 0 1 * * ?", "2012-11-04T01:00:00-0500"),
        ("TZ=America/New_York 2012-11-04T01:00:00-0500", "0 0 1 * * ?", "2012-11-05T01:00:00-0500"),
        // 2am nightly job
        ("TZ=America/New_York 2012-11-04T00:00:00-0400", "0 0 2 * * ?", "2012-11-04T02:00:00-0500"),
        ("TZ=America/New_York 2012-11-04T02:00:00-0500", "0 0 2 * * ?", "2012-11-05T02:00:00-0500"),
        // 3am nightly job
        ("TZ=America/New_York 2012-11-04T00:00:00-0400", "0 0 3 * * ?", "2012-11-04T03:00:00-0500"),
        ("TZ=America/New_York 2012-11-04T03:00:00-0500", "0 0 3 * * ?", "2012-11-05T03:00:00-0500"),
        // Unsatisfiable
        ("Mon Jul 9 23:35 2012", "0 0 0 30 Feb ?", ""),
        ("Mon Jul 9 23:35 2012", "0 0 0 31 Apr ?", ""),
        // Monthly job
        ("TZ=America/New_York 2012-11-04T00:00:00-0400", "0 0 3 3 * ?", "2012-12-03T03:00:00-0500"),
        // Test the scenario of DST resulting in midnight not being a valid time.
        // https://github.com/robfig/cron/issues/157
        ("2018-10-17T05:00:00-0400", "TZ=America/Sao_Paulo 0 0 9 10 * ?", "2018-11-10T06:00:00-0500"),
        ("2018-02-14T05:00:00-0500", "TZ=America/Sao_Paulo 0 0 9 22 * ?", "2018-02-22T07:00:00-0500"),
    ];
    for (time, spec, expected) in rows {
        let sched = second_parser().parse(spec).unwrap();
        let actual = sched.next(&get_time(time).unwrap()).map(|z| z.timestamp());
        let expected = get_time(expected).map(|z| z.timestamp());
        assert_eq!(actual, expected, "{time}, {spec:?}");
    }
}

#[test]
fn errors() {
    for spec in ["xyz", "60 0 * * *", "0 60 * * *", "0 0 * * XYZ"] {
        assert!(parse_standard(spec).is_err(), "{spec}");
    }
}

#[test]
fn next_with_tz() {
    let rows = [
        // Failing tests
        ("2016-01-03T13:09:03+0530", "14 14 * * *", "2016-01-03T14:14:00+0530"),
        ("2016-01-03T04:09:03+0530", "14 14 * * ?", "2016-01-03T14:14:00+0530"),
        // Passing tests
        ("2016-01-03T14:09:03+0530", "14 14 * * *", "2016-01-03T14:14:00+0530"),
        ("2016-01-03T14:00:00+0530", "14 14 * * ?", "2016-01-03T14:14:00+0530"),
    ];
    for (time, spec, expected) in rows {
        let sched = parse_standard(spec).unwrap();
        let actual = sched.next(&get_time(time).unwrap()).map(|z| z.timestamp());
        assert_eq!(actual, get_time(expected).map(|z| z.timestamp()), "{time}, {spec:?}");
    }
}

// https://github.com/robfig/cron/issues/144
#[test]
fn slash0_no_hang() {
    assert!(parse_standard("TZ=America/New_York 15/0 * * * *").is_err());
}

#[test]
fn constant_delay_next() {
    const MS: i64 = 1_000_000;
    const S: i64 = 1_000 * MS;
    const MIN: i64 = 60 * S;
    const H: i64 = 60 * MIN;
    let rows = [
        // Simple cases
        ("Mon Jul 9 14:45 2012", 15 * MIN + 50, "Mon Jul 9 15:00 2012"),
        ("Mon Jul 9 14:59 2012", 15 * MIN, "Mon Jul 9 15:14 2012"),
        ("Mon Jul 9 14:59:59 2012", 15 * MIN, "Mon Jul 9 15:14:59 2012"),
        // Wrap around hours
        ("Mon Jul 9 15:45 2012", 35 * MIN, "Mon Jul 9 16:20 2012"),
        // Wrap around days
        ("Mon Jul 9 23:46 2012", 14 * MIN, "Tue Jul 10 00:00 2012"),
        ("Mon Jul 9 23:45 2012", 35 * MIN, "Tue Jul 10 00:20 2012"),
        ("Mon Jul 9 23:35:51 2012", 44 * MIN + 24 * S, "Tue Jul 10 00:20:15 2012"),
        ("Mon Jul 9 23:35:51 2012", 25 * H + 44 * MIN + 24 * S, "Thu Jul 11 01:20:15 2012"),
        // Wrap around months
        ("Mon Jul 9 23:35 2012", 91 * 24 * H + 25 * MIN, "Thu Oct 9 00:00 2012"),
        // Wrap around minute, hour, day, month, and year
        ("Mon Dec 31 23:59:45 2012", 15 * S, "Tue Jan 1 00:00:00 2013"),
        // Round to nearest second on the delay
        ("Mon Jul 9 14:45 2012", 15 * MIN + 50, "Mon Jul 9 15:00 2012"),
        // Round up to 1 second if the duration is less.
        ("Mon Jul 9 14:45:00 2012", 15 * MS, "Mon Jul 9 14:45:01 2012"),
        // Round to nearest second when calculating the next time.
        ("Mon Jul 9 14:45:00.005 2012", 15 * MIN, "Mon Jul 9 15:00 2012"),
        // Round to nearest second for both.
        ("Mon Jul 9 14:45:00.005 2012", 15 * MIN + 50, "Mon Jul 9 15:00 2012"),
    ];
    for (time, delay, expected) in rows {
        let actual = every(delay).next(&get_time(time).unwrap()).unwrap();
        assert_eq!(actual, get_time(expected).unwrap(), "{time}, {delay}");
    }
}

#[test]
fn go_durations() {
    let ok: &[(&str, i64)] = &[
        ("0", 0),
        ("5m", 300_000_000_000),
        ("1h30m", 5_400_000_000_000),
        ("10s", 10_000_000_000),
        ("1.5s", 1_500_000_000),
        (".5s", 500_000_000),
        ("-2s", -2_000_000_000),
        ("+3ms", 3_000_000),
        ("1µs", 1_000),
        ("1μs", 1_000),
        ("9223372036854775807ns", i64::MAX),
    ];
    for (s, want) in ok {
        assert_eq!(parse_duration(s), Ok(*want), "{s}");
    }
    let bad: &[(&str, &str)] = &[
        ("", "time: invalid duration \"\""),
        ("Xm", "time: invalid duration \"Xm\""),
        ("5", "time: missing unit in duration \"5\""),
        ("5d", "time: unknown unit \"d\" in duration \"5d\""),
        (".s", "time: invalid duration \".s\""),
        ("9223372036854775808ns", "time: invalid duration \"9223372036854775808ns\""),
    ];
    for (s, want) in bad {
        assert_eq!(parse_duration(s), Err(want.to_string()), "{s}");
    }
}

#[test]
fn locations_as_go_loads_them() {
    assert_eq!(load_location(""), Ok(Location::Zone(TimeZone::UTC)));
    assert_eq!(load_location("Local"), Ok(Location::Local));
    assert!(matches!(load_location("America/New_York"), Ok(Location::Zone(_))));
    assert_eq!(load_location("broken"), Err("unknown time zone broken".into()));
    assert_eq!(load_location("america/new_york"), Err("unknown time zone america/new_york".into()));
    assert_eq!(load_location("../etc/passwd"), Err("time: invalid location name".into()));
    let e = parse_standard("TZ=Nowhere/City * * * * *").unwrap_err();
    assert_eq!(e, "provided bad location Nowhere/City: unknown time zone Nowhere/City");
    assert!(parse_standard("TZ=UTC").is_err());
}
