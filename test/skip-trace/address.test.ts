import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  normalizeActor,
  normalizeEntityName,
  normalizePersonNamePart,
  standardizeAddress,
  traceCacheKey,
} from '../../src/address/index.js';
import type { ActorInput, AddressInput, StandardAddress } from '../../src/address/index.js';
import { streetSuffix, unitDesignator } from '../../src/address/lexicon.js';
import { STREET_SUFFIX_SPELLINGS, UNIT_DESIGNATORS } from '../../src/address/pub28-tables.js';

const austin = { city: 'Austin', state: 'TX', zip: '78701' };
const line1Of = (line1: string, line2?: string | null): string => standardizeAddress({ ...austin, line1, line2 }).line1;
const keyOf = (a: AddressInput, actor: ActorInput | null = null): string => traceCacheKey(standardizeAddress(a), normalizeActor(actor));
const restandardize = (out: StandardAddress): StandardAddress =>
  standardizeAddress({ line1: out.line1, city: out.city, state: out.state, zip: out.zip5 });

describe('standardizeAddress: delivery line', () => {
  // [input line1, expected line1]
  const rows: readonly (readonly [string, string])[] = [
    // Street suffixes (Pub 28 C1), including the misspellings CRM imports carry.
    ['123 Main Street', '123 MAIN ST'],
    ['123 main str', '123 MAIN ST'],
    ['123 Main Strt', '123 MAIN ST'],
    ['123 Main St.', '123 MAIN ST'],
    ['500 Congress Avenue', '500 CONGRESS AVE'],
    ['500 Congress Av', '500 CONGRESS AVE'],
    ['500 Congress Aven', '500 CONGRESS AVE'],
    ['500 Congress Avenu', '500 CONGRESS AVE'],
    ['500 Congress Avn', '500 CONGRESS AVE'],
    ['500 Congress Avnue', '500 CONGRESS AVE'],
    ['9 Sunset Boulevard', '9 SUNSET BLVD'],
    ['9 Sunset Boul', '9 SUNSET BLVD'],
    ['9 Sunset Boulv', '9 SUNSET BLVD'],
    ['77 Mill Road', '77 MILL RD'],
    ['8 Lake Drive', '8 LAKE DR'],
    ['8 Lake Driv', '8 LAKE DR'],
    ['8 Lake Drv', '8 LAKE DR'],
    ['3 Cherry Lane', '3 CHERRY LN'],
    ['14 Oak Court', '14 OAK CT'],
    ['2 Maple Circle', '2 MAPLE CIR'],
    ['2 Maple Circ', '2 MAPLE CIR'],
    ['2 Maple Circl', '2 MAPLE CIR'],
    ['2 Maple Crcl', '2 MAPLE CIR'],
    ['2 Maple Crcle', '2 MAPLE CIR'],
    ['4 Pine Place', '4 PINE PL'],
    ['100 Mopac Parkway', '100 MOPAC PKWY'],
    ['100 Mopac Parkwy', '100 MOPAC PKWY'],
    ['100 Mopac Pkway', '100 MOPAC PKWY'],
    ['100 Mopac Pky', '100 MOPAC PKWY'],
    ['1 Pacific Coast Highway', '1 PACIFIC COAST HWY'],
    ['1 Pacific Coast Highwy', '1 PACIFIC COAST HWY'],
    ['1 Pacific Coast Hiway', '1 PACIFIC COAST HWY'],
    ['1 Pacific Coast Hiwy', '1 PACIFIC COAST HWY'],
    ['1 Pacific Coast Hway', '1 PACIFIC COAST HWY'],
    ['6 Vista Terrace', '6 VISTA TER'],
    ['11 Bluebonnet Trail', '11 BLUEBONNET TRL'],
    ['11 Bluebonnet Trails', '11 BLUEBONNET TRL'],
    ['11 Bluebonnet Trls', '11 BLUEBONNET TRL'],
    ['12 Abbey Way', '12 ABBEY WAY'],
    ['1 Town Square', '1 TOWN SQ'],
    ['400 Central Expressway', '400 CENTRAL EXPY'],
    ['200 Harbor Freeway', '200 HARBOR FWY'],
    ['7 Market Plaza', '7 MARKET PLZ'],
    ['5 Grand Point', '5 GRAND PT'],
    ['6 Blue Ridge', '6 BLUE RDG'],
    ['2 Deer Crossing', '2 DEER XING'],
    ['3 Sleepy Hollow', '3 SLEEPY HOLW'],
    ['4 Jackson Heights', '4 JACKSON HTS'],
    ['9 Rocky Mount', '9 ROCKY MT'],
    ['10 Eagle Mountain', '10 EAGLE MTN'],
    ['1 Civic Center', '1 CIVIC CTR'],
    ['1 Civic Centre', '1 CIVIC CTR'],
    ['15 Dead Man Alley', '15 DEAD MAN ALY'],
    ['3 Ocean Causeway', '3 OCEAN CSWY'],
    ['8 Hidden Cove', '8 HIDDEN CV'],
    ['2 Walnut Creek', '2 WALNUT CRK'],
    ['6 Moon Crescent', '6 MOON CRES'],
    ['40 Oak Estates', '40 OAK ESTS'],
    ['5 Aspen Glen', '5 ASPEN GLN'],
    ['7 Orange Grove', '7 ORANGE GRV'],
    ['1 Clear Lake Junction', '1 CLEAR LAKE JCT'],
    ['9 Boat Landing', '9 BOAT LNDG'],
    ['3 Pecan Manor', '3 PECAN MNR'],
    ['33 Green Meadows', '33 GREEN MDWS'],
    ['33 Green Meadow', '33 GREEN MDW'],
    ['4 Apple Orchard', '4 APPLE ORCH'],
    ['2 Mountain Springs', '2 MOUNTAIN SPGS'],
    ['101 Union Station', '101 UNION STA'],
    ['8 Eagle Summit', '8 EAGLE SMT'],
    ['1 Garden State Turnpike', '1 GARDEN STATE TPKE'],
    ['50 Hidden Valley', '50 HIDDEN VLY'],
    ['6 Bay View', '6 BAY VW'],
    ['12 Lakeside Village', '12 LAKESIDE VLG'],
    ['400 E Fort Lowell Stravenue', '400 E FORT LOWELL STRA'],
    ['12 Oak Loop', '12 OAK LOOP'],
    ['5 Quail Run', '5 QUAIL RUN'],
    // Only the last word is a suffix; earlier suffix words are part of the name.
    ['123 Park Avenue', '123 PARK AVE'],
    ['45 Court Street', '45 COURT ST'],
    ['10 Avenue Road', '10 AVENUE RD'],
    ['20 Circle Drive', '20 CIRCLE DR'],
    ['8 Lake Shore Drive', '8 LAKE SHORE DR'],
    ['55 Front St', '55 FRONT ST'],
    ['100 Key Rd', '100 KEY RD'],
    ['10 Court', '10 COURT'],
    ['1 Avenue of the Americas', '1 AVENUE OF THE AMERICAS'],
    // Directionals, pre and post.
    ['123 North Main Street', '123 N MAIN ST'],
    ['123 south congress ave', '123 S CONGRESS AVE'],
    ['123 Main St West', '123 MAIN ST W'],
    ['1600 Pennsylvania Avenue Northwest', '1600 PENNSYLVANIA AVE NW'],
    ['1600 Pennsylvania Ave. N.W.', '1600 PENNSYLVANIA AVE NW'],
    ['1600 Pennsylvania Ave North West', '1600 PENNSYLVANIA AVE NW'],
    ['123 N.E. Main St.', '123 NE MAIN ST'],
    ['123 North East Main Street', '123 NE MAIN ST'],
    ['123 Northeast 5th Ave', '123 NE 5TH AVE'],
    ['700 N. Lamar Blvd.', '700 N LAMAR BLVD'],
    ['200 West Avenue South', '200 WEST AVE S'],
    ['200 E West Hwy', '200 E WEST HWY'],
    ['4 SW 8th St', '4 SW 8TH ST'],
    // A street whose name is a directional keeps it as the name.
    ['100 North Street', '100 NORTH ST'],
    ['100 N St', '100 N ST'],
    ['100 East', '100 EAST'],
    ['10 W North Ave', '10 W NORTH AVE'],
    // Secondary units (Pub 28 C2) in line 1.
    ['123 Main St Apt 4', '123 MAIN ST APT 4'],
    ['123 Main St Apartment 4B', '123 MAIN ST APT 4B'],
    ['123 Main St #4', '123 MAIN ST # 4'],
    ['123 Main St # 4', '123 MAIN ST # 4'],
    ['123 Main St Apt #4', '123 MAIN ST APT 4'],
    ['123 Main St APT#4', '123 MAIN ST APT 4'],
    ['123 Main St Apt. No. 4', '123 MAIN ST APT 4'],
    ['123 Main St Apt4', '123 MAIN ST APT 4'],
    ['123 Main St Apt-4', '123 MAIN ST APT 4'],
    ['123 Main St Suite 200', '123 MAIN ST STE 200'],
    ['123 Main St Ste200', '123 MAIN ST STE 200'],
    ['123 Main St Unit B', '123 MAIN ST UNIT B'],
    ['123 Main St, Bldg 3', '123 MAIN ST BLDG 3'],
    ['123 Main St Building C Apt 4', '123 MAIN ST BLDG C APT 4'],
    ['123 Main St Floor 2', '123 MAIN ST FL 2'],
    ['123 Main St Room 101', '123 MAIN ST RM 101'],
    ['123 Main St Department 7', '123 MAIN ST DEPT 7'],
    ['123 Main St Basement', '123 MAIN ST BSMT'],
    ['123 Main St Front', '123 MAIN ST FRNT'],
    ['55 Front St Rear', '55 FRONT ST REAR'],
    ['9 Airport Blvd Hangar 12', '9 AIRPORT BLVD HNGR 12'],
    ['1 Lock Rd Key 5', '1 LOCK RD KEY 5'],
    ['123 Main St Lobby', '123 MAIN ST LBBY'],
    ['5 Sunny Acres Lot 12', '5 SUNNY ACRES LOT 12'],
    ['123 Main St Lower', '123 MAIN ST LOWR'],
    ['123 Main St Office', '123 MAIN ST OFC'],
    ['123 Main St Penthouse', '123 MAIN ST PH'],
    ['123 Main St PH 2', '123 MAIN ST PH 2'],
    ['1 Dock Rd Pier 3', '1 DOCK RD PIER 3'],
    ['123 Main St Side', '123 MAIN ST SIDE'],
    ['45 Harbor Dr Slip 9', '45 HARBOR DR SLIP 9'],
    ['1 Mobile Ln Space 7', '1 MOBILE LN SPC 7'],
    ['1 Bus Ln Stop 3', '1 BUS LN STOP 3'],
    ['1 Mobile Ln Trailer 7', '1 MOBILE LN TRLR 7'],
    ['123 Main St Upper', '123 MAIN ST UPPR'],
    ['123 Main St North Apt 4', '123 MAIN ST N APT 4'],
    // Whitespace, punctuation and case.
    ['  123   MAIN    street  ', '123 MAIN ST'],
    ['123, Main St.,', '123 MAIN ST'],
    ['123 mAiN sTrEeT', '123 MAIN ST'],
    ["123 O'Farrell St", '123 OFARRELL ST'],
    ['123 Calle Peña', '123 CALLE PENA'],
    ['123 Main St\tApt\n4', '123 MAIN ST APT 4'],
    // House numbers: fractions, hyphens, ordinal street names.
    ['123 1/2 Main St', '123 1/2 MAIN ST'],
    ['123½ Main St', '123 1/2 MAIN ST'],
    ['12-34 56th Ave', '12-34 56TH AVE'],
    ['123 First Street', '123 FIRST ST'],
    ['200 E 42nd St', '200 E 42ND ST'],
    ['N123W456 County Line Rd', 'N123W456 COUNTY LINE RD'],
    // Highway-style names keep their words (HWY spelled out before a number).
    ['State Highway 71', 'STATE HIGHWAY 71'],
    ['4800 State Highway 71', '4800 STATE HIGHWAY 71'],
    ['4800 State Hwy 71', '4800 STATE HIGHWAY 71'],
    ['100 US Hwy 290 W', '100 US HIGHWAY 290 W'],
    ['12 County Road 120', '12 COUNTY ROAD 120'],
    ['12 Co Rd 120', '12 COUNTY ROAD 120'],
    ['12 CR 120', '12 COUNTY ROAD 120'],
    ['12 FM 1960 Rd', '12 FM 1960 RD'],
    // Numbered streets take their ordinal when they have a suffix; grid numbers and numbered roads keep the number.
    ['200 W 42 St', '200 W 42ND ST'],
    ['350 5 Ave', '350 5TH AVE'],
    ['500 E 1 Ave', '500 E 1ST AVE'],
    ['14 11 St', '14 11TH ST'],
    ['200 S 300 W', '200 S 300 W'],
    ['100 71 Hwy', '100 71 HWY'],
    // Floors written as ordinals are the unit FL.
    ['350 5th Ave 28th Floor', '350 5TH AVE FL 28'],
    ['350 5th Ave 28th Fl', '350 5TH AVE FL 28'],
    ['350 5th Ave Floor 28th', '350 5TH AVE FL 28'],
    // Rural routes, highway contract routes and military units (Pub 28 §24, §25, §23).
    ['Rural Route 2 Box 45', 'RR 2 BOX 45'],
    ['RFD 2 Box 45', 'RR 2 BOX 45'],
    ['RR2 Box 45', 'RR 2 BOX 45'],
    ['Rural Rte 2 Box 45', 'RR 2 BOX 45'],
    ['Box 45, RR 2', 'RR 2 BOX 45'],
    ['Route 2 Box 45', 'RR 2 BOX 45'],
    ['Route 66', 'ROUTE 66'],
    ['Highway Contract 1 Box 12', 'HC 1 BOX 12'],
    ['HC1 Box 12', 'HC 1 BOX 12'],
    ['Star Route 1 Box 12', 'HC 1 BOX 12'],
    ['PSC 1234, Box #56', 'PSC 1234 BOX 56'],
    // PO boxes.
    ['PO Box #123', 'PO BOX 123'],
    ['P.O. Box 123', 'PO BOX 123'],
    ['Post Office Box 123', 'PO BOX 123'],
    ['PO Box 123', 'PO BOX 123'],
    ['p o box 123', 'PO BOX 123'],
    // Degenerate input stays total.
    ['', ''],
    ['#', ''],
    ['Apt 4', 'APT 4'],
  ];

  it.each(rows)('%j → %j', (input, expected) => {
    expect(line1Of(input)).toBe(expected);
  });

  it('has plenty of real-world rows', () => {
    expect(rows.length).toBeGreaterThanOrEqual(60);
  });

  // [line1, line2, expected line1]
  const twoLineRows: readonly (readonly [string, string | null, string])[] = [
    ['123 Main St', 'Apt 4', '123 MAIN ST APT 4'],
    ['123 Main St', '#4', '123 MAIN ST # 4'],
    ['123 Main St', '4', '123 MAIN ST # 4'],
    ['123 Main St', 'B', '123 MAIN ST # B'],
    ['123 Main St', 'Suite 200', '123 MAIN ST STE 200'],
    ['123 Main St', 'Rear', '123 MAIN ST REAR'],
    ['123 Main St', '  ', '123 MAIN ST'],
    ['123 Main St', null, '123 MAIN ST'],
    ['Apt 4', '123 Main St', '123 MAIN ST APT 4'],
    ['123 Old Hwy', '71', '123 OLD HWY # 71'],
  ];

  it.each(twoLineRows)('%j + %j → %j', (line1, line2, expected) => {
    expect(line1Of(line1, line2)).toBe(expected);
  });

  it('splits the delivery line into Pub 28 fields', () => {
    expect(standardizeAddress({ line1: '123 n. main street sw apt 4', city: 'austin', state: 'tx', zip: '78701-1234' })).toEqual({
      line1: '123 N MAIN ST SW APT 4',
      primaryNumber: '123',
      preDirectional: 'N',
      streetName: 'MAIN',
      suffix: 'ST',
      postDirectional: 'SW',
      unitDesignator: 'APT',
      unitNumber: '4',
      city: 'AUSTIN',
      state: 'TX',
      zip5: '78701',
      zip4: '1234',
    });
    expect(standardizeAddress({ line1: '100 North Street', city: '', state: '', zip: '' })).toMatchObject({
      preDirectional: null,
      streetName: 'NORTH',
      suffix: 'ST',
    });
    expect(standardizeAddress({ line1: '123 1/2 Main St Bldg C Apt 4', city: '', state: '', zip: '' })).toMatchObject({
      primaryNumber: '123 1/2',
      streetName: 'MAIN',
      unitDesignator: 'BLDG',
      unitNumber: 'C APT 4',
    });
    expect(standardizeAddress({ line1: '55 Front St Rear', city: '', state: '', zip: '' })).toMatchObject({
      streetName: 'FRONT',
      suffix: 'ST',
      unitDesignator: 'REAR',
      unitNumber: null,
    });
  });
});

describe('standardizeAddress: last line', () => {
  const cities: readonly (readonly [string, string])[] = [
    ['Austin', 'AUSTIN'],
    ['St. Louis', 'ST LOUIS'],
    ['St.Louis', 'ST LOUIS'],
    ["Coeur d'Alene", 'COEUR D ALENE'],
    ['Wilkes-Barre', 'WILKES BARRE'],
    ['  new   york ', 'NEW YORK'],
    ['San José', 'SAN JOSE'],
    ['Winston-Salem,', 'WINSTON SALEM'],
  ];
  it.each(cities)('city %j → %j', (city, expected) => {
    expect(standardizeAddress({ line1: '', city, state: '', zip: '' }).city).toBe(expected);
  });

  const states: readonly (readonly [string, string])[] = [
    ['tx', 'TX'],
    ['TX', 'TX'],
    [' Tx. ', 'TX'],
    ['T.X.', 'TX'],
    ['Texas', 'TX'],
    ['new york', 'NY'],
    ['District of Columbia', 'DC'],
    ['Puerto Rico', 'PR'],
    ['Tex', 'TEX'],
    ['', ''],
  ];
  it.each(states)('state %j → %j', (state, expected) => {
    expect(standardizeAddress({ line1: '', city: '', state, zip: '' }).state).toBe(expected);
  });

  const zips: readonly (readonly [string, string, string | null])[] = [
    ['78701', '78701', null],
    ['78701-1234', '78701', '1234'],
    ['787011234', '78701', '1234'],
    [' 78701 - 1234 ', '78701', '1234'],
    ['2134', '02134', null],
    ['21341234', '02134', '1234'],
    ['02134-0001', '02134', '0001'],
    ['787', '787', null],
    ['ABCDE', '', null],
    ['', '', null],
  ];
  it.each(zips)('zip %j → %j + %j', (zip, zip5, zip4) => {
    expect(standardizeAddress({ line1: '', city: '', state: '', zip })).toMatchObject({ zip5, zip4 });
  });
});

describe('traceCacheKey', () => {
  it('agrees for the two spellings the endpoint sees most', () => {
    const a = keyOf({ line1: '123 Main Street Apt 4', city: 'Austin', state: 'tx', zip: '78701' });
    const b = keyOf({ line1: '123 MAIN ST #4', city: 'AUSTIN', state: 'TX', zip: '78701-1234' });
    expect(a).toBe(b);
    expect(a).toMatch(/^[0-9a-f]{64}$/u);
  });

  it('reads APT, UNIT and # as one designator, wherever the unit is written', () => {
    const variants = [
      { line1: '123 Main St Apt 4' },
      { line1: '123 Main St #4' },
      { line1: '123 Main St # 4' },
      { line1: '123 Main St Unit 4' },
      { line1: '123 Main St Apartment No. 4' },
      { line1: '123 Main St', line2: 'Apt 4' },
      { line1: '123 Main St', line2: '#4' },
      { line1: '123 Main St', line2: '4' },
      { line1: 'Apt 4', line2: '123 Main St' },
    ];
    const keys = new Set(variants.map((v) => keyOf({ ...austin, ...v })));
    expect(keys.size).toBe(1);
  });

  it('keeps every other designator apart from APT: a suite is not an apartment', () => {
    const lines = ['Apt 4', 'Suite 4', 'Floor 4', 'Room 4', 'Lot 4', 'Bldg 4', 'Space 4', 'Trailer 4'].map((u) => `123 Main St ${u}`);
    expect(new Set(lines.map((line1) => keyOf({ ...austin, line1 }))).size).toBe(lines.length);
    expect(keyOf({ ...austin, line1: '123 Main St Suite 4' })).toBe(keyOf({ ...austin, line1: '123 MAIN ST STE 4' }));
  });

  it('agrees across suffix, directional, case and punctuation spellings', () => {
    const keys = new Set(
      [
        { line1: '700 North Lamar Boulevard', city: 'Austin', state: 'Texas', zip: '78703' },
        { line1: '700 N. Lamar Blvd.', city: 'AUSTIN', state: 'tx', zip: '787031234' },
        { line1: '  700 n lamar boul ', city: ' austin ', state: 'T.X.', zip: '78703-0000' },
      ].map((a) => keyOf(a)),
    );
    expect(keys.size).toBe(1);
  });

  it('tells different units, buildings, streets and ZIPs apart', () => {
    const base = { ...austin, line1: '123 Main St Apt 4' };
    const key = keyOf(base);
    expect(keyOf({ ...base, line1: '123 Main St Apt 5' })).not.toBe(key);
    expect(keyOf({ ...base, line1: '123 Main St' })).not.toBe(key);
    expect(keyOf({ ...base, line1: '123 Main St Bldg B Apt 4' })).not.toBe(key);
    expect(keyOf({ ...base, line1: '123 N Main St Apt 4' })).not.toBe(key);
    expect(keyOf({ ...base, line1: '123 Main Ave Apt 4' })).not.toBe(key);
    expect(keyOf({ ...base, zip: '78702' })).not.toBe(key);
    expect(keyOf({ ...base, city: 'Round Rock' })).not.toBe(key);
    expect(keyOf({ ...base, line1: '123 Main St Rear' })).not.toBe(keyOf({ ...base, line1: '123 Main St' }));
  });

  it('ignores ZIP+4', () => {
    expect(keyOf({ ...austin, line1: '1 Main St', zip: '78701-1111' })).toBe(keyOf({ ...austin, line1: '1 Main St', zip: '78701-2222' }));
  });

  it('changes with the actor and folds entity spellings', () => {
    const address = { ...austin, line1: '123 Main St' };
    const none = keyOf(address, null);
    const acme = keyOf(address, { type: 'entity', name: 'Acme Holdings LLC' });
    expect(acme).not.toBe(none);
    expect(keyOf(address, { type: 'entity', name: 'ACME HOLDINGS, L.L.C.' })).toBe(acme);
    expect(keyOf(address, { type: 'entity', name: 'Acme Holdings Limited Liability Company' })).toBe(acme);
    expect(keyOf(address, { type: 'entity', name: 'Acme Holdings Inc' })).not.toBe(acme);

    const person = keyOf(address, { type: 'person', firstName: 'Mary-Ann', lastName: "O'Brien" });
    expect(person).not.toBe(none);
    expect(keyOf(address, { type: 'person', firstName: 'mary ann', lastName: 'OBRIEN' })).toBe(person);
    expect(keyOf(address, { type: 'person', firstName: 'Mary', lastName: "O'Brien" })).not.toBe(person);
    // First and last are kept apart: swapping them is a different person.
    expect(keyOf(address, { type: 'person', firstName: "O'Brien", lastName: 'Mary-Ann' })).not.toBe(person);
    // A person and an entity with the same folded text are different actors.
    expect(keyOf(address, { type: 'person', firstName: null, lastName: 'Acme' })).not.toBe(
      keyOf(address, { type: 'entity', name: 'Acme' }),
    );
    // An actor with no usable name is no actor.
    expect(keyOf(address, { type: 'person', firstName: ' ', lastName: '--' })).toBe(none);
  });
});

describe('normalizeEntityName', () => {
  const rows: readonly (readonly [string, string])[] = [
    ['Acme Holdings LLC', 'ACME HOLDINGS LLC'],
    ['Acme Holdings, LLC', 'ACME HOLDINGS LLC'],
    ['ACME HOLDINGS, L.L.C.', 'ACME HOLDINGS LLC'],
    ['Acme Holdings L L C', 'ACME HOLDINGS LLC'],
    ['Acme Holdings L. L. C.', 'ACME HOLDINGS LLC'],
    ['acme holdings limited liability company', 'ACME HOLDINGS LLC'],
    ['Acme Inc', 'ACME INC'],
    ['Acme, Inc.', 'ACME INC'],
    ['Acme Incorporated', 'ACME INC'],
    ['Acme Corp.', 'ACME CORP'],
    ['Acme Corporation', 'ACME CORP'],
    ['Acme Co.', 'ACME CO'],
    ['Acme Company', 'ACME CO'],
    ['Acme Ltd', 'ACME LTD'],
    ['Acme Limited', 'ACME LTD'],
    ['Acme LP', 'ACME LP'],
    ['Acme, L.P.', 'ACME LP'],
    ['Acme Limited Partnership', 'ACME LP'],
    ['Acme L.L.P.', 'ACME LLP'],
    ['Acme PLLC', 'ACME PLLC'],
    ['Acme Professional Corporation', 'ACME PC'],
    ['Acme Company, Incorporated', 'ACME CO INC'],
    ['Smith & Sons Co', 'SMITH AND SONS CO'],
    ["McDonald's Corp", 'MCDONALDS CORP'],
    ['  acme   holdings  ', 'ACME HOLDINGS'],
    ['Société Générale', 'SOCIETE GENERALE'],
    ['Company Store Holdings', 'COMPANY STORE HOLDINGS'],
    ['', ''],
  ];
  it.each(rows)('%j → %j', (input, expected) => {
    expect(normalizeEntityName(input)).toBe(expected);
  });
});

describe('normalizePersonNamePart', () => {
  // Spaces and punctuation are removed entirely (not turned into spaces), so every spelling of
  // a compound name agrees: MARY-ANN / MARY ANN / MARYANN, DE LA CRUZ / DELACRUZ.
  const rows: readonly (readonly [string, string])[] = [
    ["o'brien", 'OBRIEN'],
    ['O’Brien', 'OBRIEN'],
    ['Mary-Ann', 'MARYANN'],
    ['Mary Ann', 'MARYANN'],
    ['De La Cruz', 'DELACRUZ'],
    ['DeLaCruz', 'DELACRUZ'],
    ['José', 'JOSE'],
    ['  smith  ', 'SMITH'],
    ['J.', 'J'],
    ['St. John', 'STJOHN'],
    ['', ''],
  ];
  it.each(rows)('%j → %j', (input, expected) => {
    expect(normalizePersonNamePart(input)).toBe(expected);
  });
});

describe('normalizeActor', () => {
  it.each([
    [null, null],
    [undefined, null],
    [
      { type: 'person', firstName: 'Mary-Ann', lastName: "o'brien" },
      { type: 'person', firstName: 'MARYANN', lastName: 'OBRIEN' },
    ],
    [
      { type: 'person', lastName: 'Smith' },
      { type: 'person', firstName: null, lastName: 'SMITH' },
    ],
    [
      { type: 'person', firstName: 'Cher', lastName: null },
      { type: 'person', firstName: 'CHER', lastName: null },
    ],
    [{ type: 'person', firstName: ' ', lastName: '.' }, null],
    [
      { type: 'entity', name: 'Acme Holdings, L.L.C.' },
      { type: 'entity', name: 'ACME HOLDINGS LLC' },
    ],
    [{ type: 'entity', name: ' , ' }, null],
    [{ type: 'entity' }, null],
  ] as const)('%j → %j', (input, expected) => {
    expect(normalizeActor(input as ActorInput | null | undefined)).toEqual(expected);
  });
});

describe('Pub 28 tables', () => {
  it('maps every standard suffix to itself and no spelling to two standards', () => {
    const seen = new Map<string, string>();
    for (const [standard, spellings] of Object.entries(STREET_SUFFIX_SPELLINGS)) {
      expect(streetSuffix(standard)).toBe(standard);
      for (const spelling of spellings) {
        expect(seen.get(spelling) ?? standard, spelling).toBe(standard);
        seen.set(spelling, standard);
      }
    }
    expect(Object.keys(STREET_SUFFIX_SPELLINGS).length).toBeGreaterThan(190);
  });

  it('never turns a non-designator suffix into a unit designator (that would re-parse as a unit)', () => {
    for (const [standard, spellings] of Object.entries(STREET_SUFFIX_SPELLINGS)) {
      if (unitDesignator(standard) === undefined) continue;
      for (const spelling of spellings) expect(unitDesignator(spelling), spelling).toBeDefined();
    }
  });

  it('maps every standard unit designator to itself', () => {
    for (const standard of Object.keys(UNIT_DESIGNATORS)) expect(unitDesignator(standard)).toBe(standard);
  });
});

describe('properties', () => {
  // Words that exercise every rule (units, directionals, suffixes, markers, highways, PO boxes)
  // in mixed case and with punctuation, so random lines hit the interesting interactions.
  const vocabulary = [
    '123',
    '4',
    '12-34',
    '1/2',
    '½',
    '4B',
    'A',
    'B',
    'E',
    'N',
    'S',
    'W',
    'NE',
    'N.E.',
    'North',
    'east',
    'WEST',
    'south',
    'Main',
    'Park',
    'Court',
    'Avenue',
    'Ave.',
    'St',
    'Street',
    'Rd',
    'ROAD',
    'Hwy',
    'Highway',
    'Trailer',
    'Trlr',
    'Key',
    'Ky',
    'Co',
    'CR',
    'County',
    'Apt',
    'Apartment',
    'apt4',
    'Ste200',
    'Suite',
    'Unit',
    '#',
    '#4',
    'No.',
    'Rear',
    'Front',
    'PH',
    'Penthouse',
    'Bldg',
    'Lot',
    'Space',
    'Sp',
    'Office',
    'Lower',
    'PO',
    'P.O.',
    'Box',
    'Post',
    'Office',
    '1st',
    '42',
    '28th',
    'Floor',
    'Fl',
    'RR',
    'RR2',
    'Rural',
    'Route',
    'Rte',
    'RFD',
    'HC',
    'HC1',
    'Star',
    'Contract',
    'BOX45',
    ',',
    '.',
    '-',
    "'",
    "O'Brien",
    'Peña',
    '  ',
  ];
  const vocabLine = fc.array(fc.constantFrom(...vocabulary), { maxLength: 9 }).map((ws) => ws.join(' '));
  const anyText = fc.oneof(fc.string(), fc.string({ unit: 'binary', maxLength: 40 }), vocabLine);
  const addressInput = fc.record({
    line1: fc.oneof(vocabLine, anyText),
    line2: fc.oneof(fc.constant(null), fc.constant(undefined), vocabLine, anyText),
    city: anyText,
    state: anyText,
    zip: fc.oneof(anyText, fc.stringMatching(/^[0-9]{3,9}(-[0-9]{4})?$/u)),
  });
  const actorInput: fc.Arbitrary<ActorInput | null> = fc.oneof(
    fc.constant(null),
    fc.record({ type: fc.constant('person' as const), firstName: fc.option(anyText), lastName: fc.option(anyText) }),
    fc.record({ type: fc.constant('entity' as const), name: fc.option(fc.oneof(anyText, vocabLine)) }),
  );

  it('is total: never throws, always yields a 64-hex key', () => {
    fc.assert(
      fc.property(addressInput, actorInput, (a, actor) => {
        expect(traceCacheKey(standardizeAddress(a), normalizeActor(actor))).toMatch(/^[0-9a-f]{64}$/u);
      }),
      { numRuns: 2000 },
    );
  });

  it('is idempotent: standardizing its own output changes nothing, key included', () => {
    fc.assert(
      fc.property(addressInput, actorInput, (a, actor) => {
        const once = standardizeAddress(a);
        const twice = restandardize(once);
        expect({ ...twice, zip4: null }).toEqual({ ...once, zip4: null });
        const normalized = normalizeActor(actor);
        expect(traceCacheKey(twice, normalized)).toBe(traceCacheKey(once, normalized));
      }),
      { numRuns: 5000 },
    );
  });

  it('does not care about case or repeated whitespace (ASCII lines)', () => {
    fc.assert(
      fc.property(vocabLine, (line1) => {
        const key = keyOf({ ...austin, line1 });
        expect(keyOf({ ...austin, line1: line1.toLowerCase() })).toBe(key);
        expect(keyOf({ ...austin, line1: line1.toUpperCase() })).toBe(key);
        expect(keyOf({ ...austin, line1: ` ${line1.replaceAll(' ', '   ')} ` })).toBe(key);
      }),
      { numRuns: 2000 },
    );
  });

  it('name folding is idempotent', () => {
    fc.assert(
      fc.property(fc.oneof(anyText, vocabLine), (s) => {
        expect(normalizeEntityName(normalizeEntityName(s))).toBe(normalizeEntityName(s));
        expect(normalizePersonNamePart(normalizePersonNamePart(s))).toBe(normalizePersonNamePart(s));
        const actor = normalizeActor({ type: 'entity', name: s });
        expect(normalizeActor(actor)).toEqual(actor);
      }),
      { numRuns: 2000 },
    );
  });
});
