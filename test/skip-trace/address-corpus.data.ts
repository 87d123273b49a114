/**
 * The address corpus: spellings of one address in groups (a group must yield one key) and pairs
 * of different addresses (a pair must yield two keys). Built from USPS Publication 28: Appendix C1
 * (street suffixes, transcribed below), Appendix C2 (secondary unit designators), the
 * directionals, and the sections on rural routes, highway contract routes, PO boxes and military
 * addresses; and from the shapes real CRM imports take (split lines, punctuation, last lines).
 */
import type { AddressInput } from '../../src/address/index.js';

export interface CorpusGroup {
  name: string;
  variants: readonly AddressInput[];
}

export interface CollisionProbe {
  name: string;
  a: AddressInput;
  b: AddressInput;
}

type LastLine = readonly [city: string, state: string, zip: string];
/** A delivery line, or line1 and line2 as a CRM split them. */
type Line = string | readonly [line1: string, line2: string];

/** Spellings of one last line; a group's variants take them in turn. */
const AUSTIN: readonly LastLine[] = [
  ['Austin', 'TX', '78701'],
  ['AUSTIN', 'tx', '78701-1234'],
  ['austin ', 'Texas', '787010042'],
];
const NEW_YORK: readonly LastLine[] = [
  ['New York', 'NY', '10036'],
  ['NEW YORK', 'ny', '10036-4014'],
  ['new york', 'New York', '100360001'],
];

function address(line: Line, [city, state, zip]: LastLine): AddressInput {
  return typeof line === 'string' ? { line1: line, city, state, zip } : { line1: line[0], line2: line[1], city, state, zip };
}

function group(name: string, lines: readonly Line[], lastLines: readonly LastLine[] = AUSTIN): CorpusGroup {
  return { name, variants: lines.map((line, i) => address(line, lastLines[i % lastLines.length])) };
}

function probe(name: string, a: Line, b: Line, lastA: LastLine = AUSTIN[0], lastB: LastLine = lastA): CollisionProbe {
  return { name, a: address(a, lastA), b: address(b, lastB) };
}

const titleCase = (s: string): string => s.replace(/\w+/gu, (w) => w[0] + w.slice(1).toLowerCase());
/** The ways one spelling arrives: as typed, in capitals, in lower case with a stray period. */
const STYLES: readonly ((s: string) => string)[] = [(s) => s, (s) => s.toUpperCase(), (s) => `${s.toLowerCase()}.`];
const styled = (lines: readonly string[]): string[] => lines.map((line, i) => STYLES[i % STYLES.length](line));

// ---------------------------------------------------------------------------------------------
// Appendix C1: primary suffix name: the spellings USPS lists for it > the standard abbreviation.

const C1_STREET_SUFFIXES = `
  ALLEY: ALLEE ALLEY ALLY ALY > ALY
  ANEX: ANEX ANNEX ANNX ANX > ANX
  ARCADE: ARC ARCADE > ARC
  AVENUE: AV AVE AVEN AVENU AVENUE AVN AVNUE > AVE
  BAYOU: BAYOO BAYOU > BYU
  BEACH: BCH BEACH > BCH
  BEND: BEND BND > BND
  BLUFF: BLF BLUF BLUFF > BLF
  BLUFFS: BLUFFS > BLFS
  BOTTOM: BOT BTM BOTTM BOTTOM > BTM
  BOULEVARD: BLVD BOUL BOULEVARD BOULV > BLVD
  BRANCH: BR BRNCH BRANCH > BR
  BRIDGE: BRDGE BRG BRIDGE > BRG
  BROOK: BRK BROOK > BRK
  BROOKS: BROOKS > BRKS
  BURG: BURG > BG
  BURGS: BURGS > BGS
  BYPASS: BYP BYPA BYPAS BYPASS BYPS > BYP
  CAMP: CAMP CP CMP > CP
  CANYON: CANYN CANYON CNYN > CYN
  CAPE: CAPE CPE > CPE
  CAUSEWAY: CAUSEWAY CAUSWA CSWY > CSWY
  CENTER: CEN CENT CENTER CENTR CENTRE CNTER CNTR CTR > CTR
  CENTERS: CENTERS > CTRS
  CIRCLE: CIR CIRC CIRCL CIRCLE CRCL CRCLE > CIR
  CIRCLES: CIRCLES > CIRS
  CLIFF: CLF CLIFF > CLF
  CLIFFS: CLFS CLIFFS > CLFS
  CLUB: CLB CLUB > CLB
  COMMON: COMMON > CMN
  COMMONS: COMMONS > CMNS
  CORNER: COR CORNER > COR
  CORNERS: CORNERS CORS > CORS
  COURSE: COURSE CRSE > CRSE
  COURT: COURT CT > CT
  COURTS: COURTS CTS > CTS
  COVE: COVE CV > CV
  COVES: COVES > CVS
  CREEK: CREEK CRK > CRK
  CRESCENT: CRESCENT CRES CRSENT CRSNT > CRES
  CREST: CREST > CRST
  CROSSING: CROSSING CRSSNG XING > XING
  CROSSROAD: CROSSROAD > XRD
  CROSSROADS: CROSSROADS > XRDS
  CURVE: CURVE > CURV
  DALE: DALE DL > DL
  DAM: DAM DM > DM
  DIVIDE: DIV DIVIDE DV DVD > DV
  DRIVE: DR DRIV DRIVE DRV > DR
  DRIVES: DRIVES > DRS
  ESTATE: EST ESTATE > EST
  ESTATES: ESTATES ESTS > ESTS
  EXPRESSWAY: EXP EXPR EXPRESS EXPRESSWAY EXPW EXPY > EXPY
  EXTENSION: EXT EXTENSION EXTN EXTNSN > EXT
  EXTENSIONS: EXTS > EXTS
  FALL: FALL > FALL
  FALLS: FALLS FLS > FLS
  FERRY: FERRY FRRY FRY > FRY
  FIELD: FIELD FLD > FLD
  FIELDS: FIELDS FLDS > FLDS
  FLAT: FLAT FLT > FLT
  FLATS: FLATS FLTS > FLTS
  FORD: FORD FRD > FRD
  FORDS: FORDS > FRDS
  FOREST: FOREST FORESTS FRST > FRST
  FORGE: FORG FORGE FRG > FRG
  FORGES: FORGES > FRGS
  FORK: FORK FRK > FRK
  FORKS: FORKS FRKS > FRKS
  FORT: FORT FRT FT > FT
  FREEWAY: FREEWAY FREEWY FRWAY FRWY FWY > FWY
  GARDEN: GARDEN GARDN GRDEN GRDN > GDN
  GARDENS: GARDENS GDNS GRDNS > GDNS
  GATEWAY: GATEWAY GATEWY GATWAY GTWAY GTWY > GTWY
  GLEN: GLEN GLN > GLN
  GLENS: GLENS > GLNS
  GREEN: GREEN GRN > GRN
  GREENS: GREENS > GRNS
  GROVE: GROV GROVE GRV > GRV
  GROVES: GROVES > GRVS
  HARBOR: HARB HARBOR HARBR HBR HRBOR > HBR
  HARBORS: HARBORS > HBRS
  HAVEN: HAVEN HVN > HVN
  HEIGHTS: HT HTS > HTS
  HIGHWAY: HIGHWAY HIGHWY HIWAY HIWY HWAY HWY > HWY
  HILL: HILL HL > HL
  HILLS: HILLS HLS > HLS
  HOLLOW: HLLW HOLLOW HOLLOWS HOLW HOLWS > HOLW
  INLET: INLT > INLT
  ISLAND: IS ISLAND ISLND > IS
  ISLANDS: ISLANDS ISLNDS ISS > ISS
  ISLE: ISLE ISLES > ISLE
  JUNCTION: JCT JCTION JCTN JUNCTION JUNCTN JUNCTON > JCT
  JUNCTIONS: JCTNS JCTS JUNCTIONS > JCTS
  KEY: KEY KY > KY
  KEYS: KEYS KYS > KYS
  KNOLL: KNL KNOL KNOLL > KNL
  KNOLLS: KNLS KNOLLS > KNLS
  LAKE: LK LAKE > LK
  LAKES: LKS LAKES > LKS
  LAND: LAND > LAND
  LANDING: LANDING LNDG LNDNG > LNDG
  LANE: LANE LN > LN
  LIGHT: LGT LIGHT > LGT
  LIGHTS: LIGHTS > LGTS
  LOAF: LF LOAF > LF
  LOCK: LCK LOCK > LCK
  LOCKS: LCKS LOCKS > LCKS
  LODGE: LDG LDGE LODG LODGE > LDG
  LOOP: LOOP LOOPS > LOOP
  MALL: MALL > MALL
  MANOR: MNR MANOR > MNR
  MANORS: MANORS MNRS > MNRS
  MEADOW: MEADOW > MDW
  MEADOWS: MDWS MEADOWS MEDOWS > MDWS
  MEWS: MEWS > MEWS
  MILL: MILL > ML
  MILLS: MILLS > MLS
  MISSION: MISSN MSSN MISSION > MSN
  MOTORWAY: MOTORWAY > MTWY
  MOUNT: MNT MT MOUNT > MT
  MOUNTAIN: MNTAIN MNTN MOUNTAIN MOUNTIN MTIN MTN > MTN
  MOUNTAINS: MNTNS MOUNTAINS > MTNS
  NECK: NCK NECK > NCK
  ORCHARD: ORCH ORCHARD ORCHRD > ORCH
  OVAL: OVAL OVL > OVAL
  OVERPASS: OVERPASS > OPAS
  PARK: PARK PRK > PARK
  PARKS: PARKS > PARK
  PARKWAY: PARKWAY PARKWY PKWAY PKWY PKY > PKWY
  PARKWAYS: PARKWAYS PKWYS > PKWY
  PASS: PASS > PASS
  PASSAGE: PASSAGE > PSGE
  PATH: PATH PATHS > PATH
  PIKE: PIKE PIKES > PIKE
  PINE: PINE > PNE
  PINES: PINES PNES > PNES
  PLACE: PLACE PL > PL
  PLAIN: PLAIN PLN > PLN
  PLAINS: PLAINS PLNS > PLNS
  PLAZA: PLAZA PLZ PLZA > PLZ
  POINT: POINT PT > PT
  POINTS: POINTS PTS > PTS
  PORT: PORT PRT > PRT
  PORTS: PORTS PRTS > PRTS
  PRAIRIE: PR PRAIRIE PRR > PR
  RADIAL: RAD RADIAL RADIEL RADL > RADL
  RAMP: RAMP > RAMP
  RANCH: RANCH RANCHES RNCH RNCHS > RNCH
  RAPID: RAPID RPD > RPD
  RAPIDS: RAPIDS RPDS > RPDS
  REST: REST RST > RST
  RIDGE: RDG RDGE RIDGE > RDG
  RIDGES: RDGS RIDGES > RDGS
  RIVER: RIV RIVER RVR RIVR > RIV
  ROAD: RD ROAD > RD
  ROADS: ROADS RDS > RDS
  ROUTE: ROUTE RTE > RTE
  ROW: ROW > ROW
  RUE: RUE > RUE
  RUN: RUN > RUN
  SHOAL: SHL SHOAL > SHL
  SHOALS: SHLS SHOALS > SHLS
  SHORE: SHOAR SHORE SHR > SHR
  SHORES: SHOARS SHORES SHRS > SHRS
  SKYWAY: SKYWAY > SKWY
  SPRING: SPG SPNG SPRING SPRNG > SPG
  SPRINGS: SPGS SPNGS SPRINGS SPRNGS > SPGS
  SPUR: SPUR > SPUR
  SPURS: SPURS > SPUR
  SQUARE: SQ SQR SQRE SQU SQUARE > SQ
  SQUARES: SQRS SQUARES > SQS
  STATION: STA STATION STATN STN > STA
  STRAVENUE: STRA STRAV STRAVEN STRAVENUE STRAVN STRVN STRVNUE > STRA
  STREAM: STREAM STREME STRM > STRM
  STREET: STREET STRT ST STR > ST
  STREETS: STREETS > STS
  SUMMIT: SMT SUMIT SUMITT SUMMIT > SMT
  TERRACE: TER TERR TERRACE > TER
  THROUGHWAY: THROUGHWAY > TRWY
  TRACE: TRACE TRACES TRCE > TRCE
  TRACK: TRACK TRACKS TRAK TRK TRKS > TRAK
  TRAFFICWAY: TRAFFICWAY > TRFY
  TRAIL: TRAIL TRAILS TRL TRLS > TRL
  TRAILER: TRAILER TRLR > TRLR
  TUNNEL: TUNEL TUNL TUNLS TUNNEL TUNNELS TUNNL > TUNL
  TURNPIKE: TRNPK TURNPIKE TURNPK TPKE > TPKE
  UNDERPASS: UNDERPASS > UPAS
  UNION: UN UNION > UN
  UNIONS: UNIONS > UNS
  VALLEY: VALLEY VALLY VLLY VLY > VLY
  VALLEYS: VALLEYS VLYS > VLYS
  VIADUCT: VDCT VIA VIADCT VIADUCT > VIA
  VIEW: VIEW VW > VW
  VIEWS: VIEWS VWS > VWS
  VILLAGE: VILL VILLAG VILLAGE VILLG VILLIAGE VLG > VLG
  VILLAGES: VILLAGES VLGS > VLGS
  VILLE: VILLE VL > VL
  VISTA: VIS VIST VISTA VST VSTA > VIS
  WALK: WALK > WALK
  WALKS: WALKS > WALK
  WALL: WALL > WALL
  WAY: WY WAY > WAY
  WAYS: WAYS > WAYS
  WELL: WELL > WL
  WELLS: WELLS WLS > WLS
`;

const suffixGroups = C1_STREET_SUFFIXES.trim()
  .split('\n')
  .map((row, i) => {
    const [name, rest] = row.trim().split(': ');
    const [spellings, standard] = rest.split(' > ');
    const all = [...new Set([...spellings.split(' '), standard])];
    return group(`C1 ${name} → ${standard}`, styled(all.map((s) => `${1000 + i} Oak ${titleCase(s)}`)));
  });

// ---------------------------------------------------------------------------------------------
// Directionals (Pub 28 §233), before and after the street name, one and two words.

const DIRECTIONALS = [
  ['North', 'N'],
  ['South', 'S'],
  ['East', 'E'],
  ['West', 'W'],
  ['Northeast', 'NE'],
  ['Northwest', 'NW'],
  ['Southeast', 'SE'],
  ['Southwest', 'SW'],
] as const;
const dotted = (abbreviation: string): string => `${abbreviation.split('').join('.')}.`;
const twoWords = (word: string): string => word.replace(/^(North|South)(east|west)$/u, (_, a: string, b: string) => `${a} ${titleCase(b)}`);

const directionalGroups = DIRECTIONALS.flatMap(([word, abbreviation], i) => [
  group(`pre-directional ${abbreviation}`, [
    `${300 + i} ${word} Main Street`,
    `${300 + i} ${abbreviation} Main St`,
    `${300 + i} ${dotted(abbreviation)} Main St.`,
    `${300 + i} ${word.toLowerCase()} main st`,
    `${300 + i} ${twoWords(word)} Main St`,
  ]),
  group(`post-directional ${abbreviation}`, [
    `${400 + i} Lamar Boulevard ${word}`,
    `${400 + i} LAMAR BLVD ${abbreviation}`,
    `${400 + i} Lamar Blvd. ${dotted(abbreviation)}`,
    `${400 + i} lamar blvd ${twoWords(word).toLowerCase()}`,
  ]),
]);

// ---------------------------------------------------------------------------------------------
// Appendix C2, secondary unit designators. APT, UNIT and # name one apartment; every other
// designator is a unit of its own, with or without a number.

const AT = '10 Park Pl';
const apartmentGroup = group('C2 APT ≡ UNIT ≡ #', [
  `${AT} Apt 4`,
  `${AT} #4`,
  `${AT} Unit 4`,
  '10 Park Place Apartment 4',
  `${AT} Apt. No. 4`,
  [AT, '4'],
  [AT, '#4'],
  [AT, 'Unit 4'],
  '10 PARK PL APT#4',
  `${AT} Apt4`,
  `${AT} Apt.4`,
  `${AT} Apt-4`,
  '10 park pl unt 4',
  ['Apt 4', AT],
  `${AT} # 4`,
  `${AT} Apt No 4`,
  `${AT} Apartment #4`,
  `${AT} Apt Number 4`,
  `${AT}, Apt 4`,
  `${AT} UNIT #4`,
]);
const apartmentLetterGroup = group('C2 APT B ≡ UNIT B ≡ # B', [`${AT} Apt B`, `${AT} #B`, `${AT} Unit B`, [AT, 'B'], [AT, 'Apt. B']]);

/** Designators that take a number: the standard, then spellings. */
const RANGED_DESIGNATORS: readonly (readonly [string, readonly string[]])[] = [
  ['STE', ['Suite', 'Ste', 'Ste.', 'Suite #', 'Suite No.', 'Suit']],
  ['BLDG', ['Building', 'Bldg', 'Bldg.', 'Bld']],
  ['DEPT', ['Department', 'Dept', 'Dept.']],
  ['FL', ['Floor', 'Fl', 'Flr', 'Fl.']],
  ['HNGR', ['Hangar', 'Hngr', 'Hanger']],
  ['KEY', ['Key', 'Key #']],
  ['LOT', ['Lot', 'Lot #', 'Lot No.']],
  ['PIER', ['Pier', 'Pier #']],
  ['RM', ['Room', 'Rm', 'Rm.']],
  ['SLIP', ['Slip', 'Slip #']],
  ['SPC', ['Space', 'Spc', 'Sp']],
  ['STOP', ['Stop', 'Stop #']],
  ['TRLR', ['Trailer', 'Trlr']],
];
/** Designators that stand alone. */
const STANDALONE_DESIGNATORS: readonly (readonly [string, readonly string[]])[] = [
  ['REAR', ['Rear', 'rear']],
  ['PH', ['Penthouse', 'Ph']],
  ['BSMT', ['Basement', 'Bsmt']],
  ['FRNT', ['Front', 'Frnt']],
  ['LOWR', ['Lower', 'Lowr']],
  ['UPPR', ['Upper', 'Uppr']],
  ['SIDE', ['Side', 'SIDE']],
  ['LBBY', ['Lobby', 'Lbby']],
  ['OFC', ['Office', 'Ofc']],
];

const designatorGroups = [
  ...RANGED_DESIGNATORS.map(([standard, spellings]) =>
    group(`C2 ${standard} 4`, [
      `${AT} ${standard} 4`,
      ...spellings.map((s) => `${AT} ${s} 4`),
      [AT, `${spellings[0]} 4`],
      `${AT} ${standard}4`.toLowerCase(),
    ]),
  ),
  ...STANDALONE_DESIGNATORS.map(([standard, spellings]) =>
    group(`C2 ${standard}`, [`${AT} ${standard}`, ...spellings.map((s) => `${AT} ${s}`), [AT, spellings[0]]]),
  ),
  group(
    'C2 floor as an ordinal',
    [
      '350 5th Ave Floor 28',
      '350 5 Ave Fl 28',
      '350 5TH AVE FL 28',
      '350 5th Avenue 28th Fl',
      ['350 5th Ave', '28th Floor'],
      '350 5th Ave 28th Floor',
      '350 5th Ave Floor 28th',
    ],
    NEW_YORK,
  ),
];

// ---------------------------------------------------------------------------------------------
// Numbered streets take their ordinal (with a suffix; a Salt Lake City grid number has none).

const ordinalGroups = [
  group('ordinal 42ND', ['200 W 42 St', '200 West 42nd Street', '200 W. 42nd St.', '200 W 42ND ST', '200 west 42 street'], NEW_YORK),
  group('ordinal 5TH', ['350 5 Ave', '350 5th Avenue', '350 5TH AVE', '350 5th Ave.'], NEW_YORK),
  group('ordinal 1ST', ['500 E 1 Ave', '500 East 1st Avenue', '500 E 1ST AVE', '500 e. 1 ave.'], NEW_YORK),
  group('ordinal 2ND', ['12 2 St', '12 2nd Street', '12 2ND ST']),
  group('ordinal 3RD', ['13 3 Ave', '13 3rd Avenue', '13 3RD AVE']),
  group('ordinal 11TH', ['14 11 St', '14 11th Street', '14 11TH ST']),
  group('ordinal 12TH', ['15 W 12 St', '15 West 12th St', '15 W 12TH ST']),
  group('ordinal 13TH', ['16 13 Ave', '16 13th Ave', '16 13TH AVENUE']),
  group('ordinal 21ST', ['17 21 St', '17 21st St', '17 21ST STREET']),
  group('ordinal 22ND', ['18 22 Ave', '18 22nd Ave', '18 22ND AVE']),
  group('ordinal 23RD', ['19 23 St', '19 23rd St', '19 23RD ST']),
  group('ordinal 101ST', ['20 101 Ave', '20 101st Ave', '20 101ST AVENUE']),
  group('ordinal 111TH', ['21 111 St', '21 111th St', '21 111TH ST']),
  group('ordinal 112TH', ['22 112 St', '22 112th Street', '22 112TH ST']),
  group('ordinal with directionals', ['4 SW 8 St', '4 Southwest 8th Street', '4 SW 8TH ST', '4 S.W. 8th St.']),
  group('ordinal with a post-directional', ['100 24 St N', '100 24th Street North', '100 24TH ST N']),
  group('ordinal in a Queens address', ['12-34 56 Ave', '12-34 56th Avenue', '12-34 56TH AVE']),
  group('grid number, no suffix', ['200 S 300 W', '200 South 300 West', '200 s. 300 w.', '200 SOUTH 300 WEST']),
];

// ---------------------------------------------------------------------------------------------
// Rural routes (§24), highway contract routes (§25), PO boxes (§26).

const HILLSBORO: readonly LastLine[] = [
  ['Hillsboro', 'WV', '24946'],
  ['HILLSBORO', 'wv', '24946-9801'],
  ['hillsboro', 'West Virginia', '24946'],
];
const ELY: readonly LastLine[] = [
  ['Ely', 'NV', '89301'],
  ['ELY', 'nv', '89301-9502'],
  ['ely', 'Nevada', '893019502'],
];

const boxGroups = [
  group(
    'rural route RR 2 BOX 45',
    [
      'Rural Route 2 Box 45',
      'RFD 2 Box 45',
      'RR2 Box 45',
      'RR 2 BOX 45',
      'Rural Rte 2 Box 45',
      'R.R. 2, Box 45',
      'RR #2 Box #45',
      'Box 45, RR 2',
      'Route 2 Box 45',
      'RFD Route 2 Box 45',
      'rural route 2 box 45',
      'Rural Free Delivery 2 Box 45',
      'RR 2 Box No. 45',
      'Rural Rt 2 Box 45',
      'RD 2 Box 45',
      'Rt 2 Box 45',
      'Rte. 2 Box 45',
      'R F D 2 Box 45',
      'RFD2 Box 45',
      'Box 45 Rural Route 2',
      ['RR 2', 'Box 45'],
    ],
    HILLSBORO,
  ),
  group(
    'rural route RR 12 BOX 7A',
    ['Rural Route 12 Box 7A', 'RR12 Box 7A', 'RR 12 BOX 7A', 'R.F.D. 12 Box 7A', 'rr 12 box 7a'],
    HILLSBORO,
  ),
  group(
    'highway contract HC 1 BOX 12',
    [
      'Highway Contract 1 Box 12',
      'HC1 Box 12',
      'HC 1 BOX 12',
      'HCR 1 Box 12',
      'Star Route 1 Box 12',
      'Hwy Contract 1 Box 12',
      'Highway Contract Route 1 Box 12',
      'H.C. 1 Box 12',
      'hc 1 box 12',
      'HC #1 Box #12',
      'Box 12 HC 1',
      'Star Rte 1 Box 12',
      'HCR1 Box 12',
      'HC Route 1 Box 12',
    ],
    ELY,
  ),
  group(
    'highway contract HC 63 BOX 2150',
    ['Highway Contract 63 Box 2150', 'HC63 Box 2150', 'HC 63 BOX 2150', 'Star Route 63, Box 2150'],
    ELY,
  ),
  group('PO BOX 123', [
    'PO Box 123',
    'P.O. Box 123',
    'Post Office Box 123',
    'P O Box 123',
    'POB 123',
    'PO Box #123',
    'POBox 123',
    'p.o. box 123',
    'PO BOX 123',
    'P. O. Box 123',
    'Po Box No. 123',
    'Post Office Box #123',
  ]),
];

// ---------------------------------------------------------------------------------------------
// Military addresses (§23): APO/FPO/DPO as the city, AA/AE/AP as the state.

const APO_AE: readonly LastLine[] = [
  ['APO', 'AE', '09204'],
  ['A.P.O.', 'Armed Forces Europe', '09204-1234'],
  ['apo', 'ae', '092041234'],
];
const APO_AP: readonly LastLine[] = [
  ['APO', 'AP', '96278'],
  ['APO', 'Armed Forces Pacific', '96278-2050'],
  ['Apo', 'ap', '96278'],
];
const FPO_AP: readonly LastLine[] = [
  ['FPO', 'AP', '96349'],
  ['F.P.O.', 'AP', '96349-0001'],
  ['fpo', 'Armed Forces Pacific', '96349'],
];
const DPO_AE: readonly LastLine[] = [
  ['DPO', 'AE', '09498'],
  ['D.P.O.', 'AE', '09498-0001'],
  ['dpo', 'Armed Forces Middle East', '09498'],
];
const APO_AA: readonly LastLine[] = [
  ['APO', 'AA', '34022'],
  ['APO', 'Armed Forces Americas', '34022-1234'],
];

const militaryGroups = [
  group('military PSC', ['PSC 1234 Box 56', 'PSC 1234, Box 56', 'psc 1234 box 56', 'PSC 1234 BOX #56'], APO_AE),
  group('military UNIT', ['Unit 2050 Box 4190', 'UNIT 2050 BOX 4190', 'unit 2050, box 4190', 'Unit 2050 Box #4190'], APO_AP),
  group('military CMR', ['CMR 450 Box 2345', 'CMR 450, Box 2345', 'cmr 450 box 2345'], APO_AE),
  group('military FPO', ['PSC 473 Box 12', 'PSC 473, BOX 12', 'psc 473 box 12'], FPO_AP),
  group('military DPO', ['Unit 8400 Box 12', 'UNIT 8400, BOX 12', 'unit 8400 box 12'], DPO_AE),
  group('military AA', ['Unit 2240 Box 1', 'UNIT 2240 BOX 1'], APO_AA),
];

// ---------------------------------------------------------------------------------------------
// Shapes real imports take.

const lastLines = (...rows: LastLine[]): readonly LastLine[] => rows;

const realShapeGroups = [
  group(
    'the two spellings the endpoint sees most',
    ['123 Main Street Apt 4', '123 MAIN ST #4'],
    lastLines(['Austin', 'tx', '78701'], ['AUSTIN', 'TX', '78701-1234']),
  ),
  group(
    'city punctuation: St. Louis',
    ['100 Olive St', '100 OLIVE ST', '100 Olive Street', '100 olive st.'],
    lastLines(
      ['St. Louis', 'MO', '63101'],
      ['ST LOUIS', 'mo', '63101-2345'],
      ['St Louis', 'Missouri', '631012345'],
      ['St.Louis', 'MO', '63101'],
    ),
  ),
  group(
    'city punctuation: Winston-Salem',
    ['1 W 4th St', '1 West 4th Street', '1 W 4TH ST'],
    lastLines(['Winston-Salem', 'NC', '27101'], ['WINSTON SALEM', 'nc', '27101'], ['Winston Salem,', 'North Carolina', '27101-0001']),
  ),
  group(
    "city punctuation: Coeur d'Alene",
    ['710 Mullan Ave', '710 MULLAN AVENUE', '710 mullan ave.'],
    lastLines(["Coeur d'Alene", 'ID', '83814'], ['COEUR D ALENE', 'id', '83814'], ['Coeur D’Alene', 'Idaho', '83814-1234']),
  ),
  group('fractional house number', ['123½ Main St', '123 1/2 Main St', '123 1/2 MAIN STREET', '123 ½ Main St']),
  group('Avenue Road', ['10 Avenue Road', '10 Avenue Rd', '10 AVENUE RD', '10 avenue rd.']),
  group('state highway', ['4800 State Highway 71', '4800 State Hwy 71', '4800 STATE HIGHWAY 71', '4800 state hwy. 71']),
  group('US highway', ['100 US Hwy 290 W', '100 U.S. Highway 290 West', '100 US HIGHWAY 290 W', '100 us hwy 290 w.']),
  group('county road', ['12 County Road 120', '12 Co Rd 120', '12 CR 120', '12 County Rd 120', '12 Cnty Rd 120', '12 CO. RD. 120']),
  group('two-word directional before the name', [
    '123 South East Main St',
    '123 SE Main St',
    '123 Southeast Main Street',
    '123 S.E. Main St.',
    '123 south east main street',
  ]),
  group(
    'two-word directional after the name',
    ['1600 Pennsylvania Ave North West', '1600 Pennsylvania Avenue NW', '1600 Pennsylvania Ave. N.W.', '1600 PENNSYLVANIA AVE NW'],
    lastLines(['Washington', 'DC', '20500'], ['WASHINGTON', 'D.C.', '20500-0003'], ['washington', 'District of Columbia', '20500']),
  ),
  group(
    'apostrophes',
    ["123 O'Farrell St", '123 OFarrell Street', '123 O’Farrell St.', '123 OFARRELL ST'],
    lastLines(['San Francisco', 'CA', '94102']),
  ),
  group('diacritics', ['123 Calle Peña', '123 Calle Pena', '123 CALLE PEÑA']),
  group('whitespace and punctuation', ['  77   Mill   Road ', '77, Mill Rd.,', '77 mill rd', '77\tMill\nRoad']),
  group('Wisconsin grid number', ['N123W456 County Line Rd', 'N123W456 County Line Road', 'n123w456 county line rd.']),
  group('suite on either line', [
    ['123 Main St', 'Suite 200'],
    '123 Main St Ste 200',
    '123 Main St STE200',
    ['Suite 200', '123 Main St'],
    '123 Main St., Ste. #200',
  ]),
  group(
    'ZIP without its leading zero',
    ['1 Harvard Ave', '1 HARVARD AVE', '1 Harvard Avenue'],
    lastLines(['Boston', 'MA', '2134'], ['BOSTON', 'ma', '02134-0001'], ['boston', 'Massachusetts', '021340001']),
  ),
  group('village', [['12 Lakeside Village', 'Apt 2'], '12 Lakeside Vlg #2', '12 LAKESIDE VILL UNIT 2']),
  group('grove', ['7 Orange Grove', '7 Orange Grv', '7 ORANGE GROV']),
  group('causeway', ['3 Ocean Causeway', '3 Ocean Cswy', '3 OCEAN CAUSWA']),
  group('Apt No', ['50 Elm St Apt No 4', '50 Elm St Apt4', '50 Elm St Apt.4', '50 Elm St Apartment Number 4', '50 ELM ST APT 4']),
];

export const CORPUS_GROUPS: readonly CorpusGroup[] = [
  ...suffixGroups,
  ...directionalGroups,
  apartmentGroup,
  apartmentLetterGroup,
  ...designatorGroups,
  ...ordinalGroups,
  ...boxGroups,
  ...militaryGroups,
  ...realShapeGroups,
];

// ---------------------------------------------------------------------------------------------
// Collision probes: two different addresses each.

const pairs = <T>(items: readonly T[]): [T, T][] => items.flatMap((a, i) => items.slice(i + 1).map((b): [T, T] => [a, b]));
const RANGED_UNITS = ['APT', ...RANGED_DESIGNATORS.map(([standard]) => standard)];
const STANDALONE_UNITS = STANDALONE_DESIGNATORS.map(([standard]) => standard);

export const COLLISION_PROBES: readonly CollisionProbe[] = [
  ...pairs(RANGED_UNITS).map(([a, b]) => probe(`${a} 4 vs ${b} 4`, `${AT} ${a} 4`, `${AT} ${b} 4`)),
  ...pairs(STANDALONE_UNITS).map(([a, b]) => probe(`${a} vs ${b}`, `${AT} ${a}`, `${AT} ${b}`)),
  ...[...RANGED_UNITS.map((u) => `${u} 4`), ...STANDALONE_UNITS].map((unit) => probe(`${unit} vs no unit`, `${AT} ${unit}`, AT)),
  probe('APT 4 vs APT 5', `${AT} Apt 4`, `${AT} Apt 5`),
  probe('APT 4 vs APT 4B', `${AT} Apt 4`, `${AT} Apt 4B`),
  probe('APT B vs APT 4', `${AT} Apt B`, `${AT} Apt 4`),
  probe('BLDG 4 APT 4 vs APT 4', `${AT} Bldg 4 Apt 4`, `${AT} Apt 4`),
  probe('BLDG B APT 4 vs BLDG C APT 4', `${AT} Bldg B Apt 4`, `${AT} Bldg C Apt 4`),
  probe('STE 4 vs STE 40', `${AT} Ste 4`, `${AT} Ste 40`),
  probe('FL 28 vs FL 2', '350 5th Ave Fl 28', '350 5th Ave Fl 2'),
  probe('FL 28 vs STE 28', '350 5th Ave 28th Floor', '350 5th Ave Ste 28'),
  probe('FL 28 vs APT 28', '350 5th Ave 28th Floor', '350 5th Ave Apt 28'),
  probe('N Main St vs Main St N', '100 N Main St', '100 Main St N'),
  probe('N Main St vs Main St', '100 N Main St', '100 Main St'),
  probe('Main St N vs Main St', '100 Main St N', '100 Main St'),
  probe('N Main St vs S Main St', '100 N Main St', '100 S Main St'),
  probe('NE Main St vs N Main St', '100 NE Main St', '100 N Main St'),
  probe('North St vs N St', '100 North St', '100 N St'),
  probe('W North Ave vs North Ave W', '10 W North Ave', '10 North Ave W'),
  probe('12A vs 12', '12A Main St', '12 Main St'),
  probe('12 1/2 vs 12', '12 1/2 Main St', '12 Main St'),
  probe('12-34 vs 1234', '12-34 Main St', '1234 Main St'),
  probe('12 vs 13', '12 Main St', '13 Main St'),
  probe('100 vs 1000', '100 Main St', '1000 Main St'),
  probe('99 vs 100', '99 Main St', '100 Main St'),
  probe('St Louis Ave vs Louis Ave', '100 St Louis Ave', '100 Louis Ave', ['Springfield', 'MO', '65806']),
  probe('St Louis Ave vs St Louis St', '100 St Louis Ave', '100 St Louis St', ['Saint Louis', 'MO', '63101']),
  probe('Saint Louis the city vs a street word', '1 Main St', '1 Main St Saint', ['Saint Louis', 'MO', '63101'], ['Louis', 'MO', '63101']),
  probe('42 St vs 43 St', '200 W 42 St', '200 W 43 St', NEW_YORK[0]),
  probe('42nd St vs 42nd Ave', '200 W 42nd St', '200 W 42nd Ave', NEW_YORK[0]),
  probe('W 42 St vs E 42 St', '200 W 42 St', '200 E 42 St', NEW_YORK[0]),
  probe('1 Ave vs 1 St', '500 E 1 Ave', '500 E 1 St', NEW_YORK[0]),
  probe('grid 300 W vs 300 E', '200 S 300 W', '200 S 300 E'),
  probe('grid 200 S 300 W vs 300 S 200 W', '200 S 300 W', '300 S 200 W'),
  probe('RR 2 BOX 45 vs BOX 46', 'RR 2 Box 45', 'RR 2 Box 46', HILLSBORO[0]),
  probe('RR 2 vs RR 3', 'RR 2 Box 45', 'RR 3 Box 45', HILLSBORO[0]),
  probe('RR vs HC', 'RR 2 Box 45', 'HC 2 Box 45', HILLSBORO[0]),
  probe('RR box vs PO box', 'RR 2 Box 45', 'PO Box 45', HILLSBORO[0]),
  probe('HC 1 BOX 12 vs BOX 21', 'HC 1 Box 12', 'HC 1 Box 21', ELY[0]),
  probe('Route 66 (a road) vs RR 66', 'Route 66', 'RR 66', ELY[0]),
  probe('PO Box 12 vs 123', 'PO Box 12', 'PO Box 123'),
  probe('PO Box 123 vs 123 Box St', 'PO Box 123', '123 Box St'),
  probe('APO vs FPO', 'PSC 1234 Box 56', 'PSC 1234 Box 56', APO_AE[0], ['FPO', 'AE', '09204']),
  probe('AE vs AP', 'PSC 1234 Box 56', 'PSC 1234 Box 56', APO_AE[0], ['APO', 'AP', '09204']),
  probe('military box 4190 vs 4191', 'Unit 2050 Box 4190', 'Unit 2050 Box 4191', APO_AP[0]),
  probe('PSC vs CMR', 'PSC 1234 Box 56', 'CMR 1234 Box 56', APO_AE[0]),
  probe('Main St vs Main Ave', '123 Main St', '123 Main Ave'),
  probe('Oak Ct vs Oak Cir', '12 Oak Ct', '12 Oak Cir'),
  probe('Oak Pl vs Oak Plz', '12 Oak Pl', '12 Oak Plz'),
  probe('Oak Meadow vs Oak Meadows', '12 Oak Meadow', '12 Oak Meadows'),
  probe('Oak Ter vs Oak Trl', '12 Oak Ter', '12 Oak Trl'),
  probe('Oak Dr vs Oak Drives', '12 Oak Dr', '12 Oak Drives'),
  probe('Avenue Rd vs Avenue', '10 Avenue Rd', '10 Avenue'),
  probe('ZIP 78701 vs 78702', '123 Main St', '123 Main St', AUSTIN[0], ['Austin', 'TX', '78702']),
  probe('Austin vs Round Rock', '123 Main St', '123 Main St', AUSTIN[0], ['Round Rock', 'TX', '78701']),
  probe('TX vs OK', '123 Main St', '123 Main St', AUSTIN[0], ['Austin', 'OK', '78701']),
];
