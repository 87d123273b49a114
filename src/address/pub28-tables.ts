/**
 * Lookup tables from USPS Publication 28 (Postal Addressing Standards), kept as plain data so
 * they can be audited against the publication without reading any parsing code.
 *
 * Every table maps a USPS standard abbreviation to the spellings that fold into it. The
 * standard abbreviation always maps to itself, which is what makes standardizing idempotent.
 */

/**
 * Appendix C1, street suffixes: standard abbreviation → primary name and common spellings.
 *
 * Deviations from the printed table: C1 lists MDW as a spelling of MEADOWS, but MDW is also the
 * standard for MEADOW; a standard must map to itself, so MDW stays MDW. TRLRS is left out because
 * its standard TRLR is also a unit designator (C2) and would then start parsing as a unit.
 */
export const STREET_SUFFIX_SPELLINGS: Readonly<Record<string, readonly string[]>> = {
  ALY: ['ALLEY', 'ALLEE', 'ALLY'],
  ANX: ['ANEX', 'ANNEX', 'ANNX'],
  ARC: ['ARCADE'],
  AVE: ['AVENUE', 'AV', 'AVEN', 'AVENU', 'AVN', 'AVNUE'],
  BYU: ['BAYOU', 'BAYOO'],
  BCH: ['BEACH'],
  BND: ['BEND'],
  BLF: ['BLUFF', 'BLUF'],
  BLFS: ['BLUFFS'],
  BTM: ['BOTTOM', 'BOT', 'BOTTM'],
  BLVD: ['BOULEVARD', 'BOUL', 'BOULV'],
  BR: ['BRANCH', 'BRNCH'],
  BRG: ['BRIDGE', 'BRDGE'],
  BRK: ['BROOK'],
  BRKS: ['BROOKS'],
  BG: ['BURG'],
  BGS: ['BURGS'],
  BYP: ['BYPASS', 'BYPA', 'BYPAS', 'BYPS'],
  CP: ['CAMP', 'CMP'],
  CYN: ['CANYON', 'CANYN', 'CNYN'],
  CPE: ['CAPE'],
  CSWY: ['CAUSEWAY', 'CAUSWA'],
  CTR: ['CENTER', 'CEN', 'CENT', 'CENTR', 'CENTRE', 'CNTER', 'CNTR'],
  CTRS: ['CENTERS'],
  CIR: ['CIRCLE', 'CIRC', 'CIRCL', 'CRCL', 'CRCLE'],
  CIRS: ['CIRCLES'],
  CLF: ['CLIFF'],
  CLFS: ['CLIFFS'],
  CLB: ['CLUB'],
  CMN: ['COMMON'],
  CMNS: ['COMMONS'],
  COR: ['CORNER'],
  CORS: ['CORNERS'],
  CRSE: ['COURSE'],
  CT: ['COURT'],
  CTS: ['COURTS'],
  CV: ['COVE'],
  CVS: ['COVES'],
  CRK: ['CREEK'],
  CRES: ['CRESCENT', 'CRSENT', 'CRSNT'],
  CRST: ['CREST'],
  XING: ['CROSSING', 'CRSSNG'],
  XRD: ['CROSSROAD'],
  XRDS: ['CROSSROADS'],
  CURV: ['CURVE'],
  DL: ['DALE'],
  DM: ['DAM'],
  DV: ['DIVIDE', 'DIV', 'DVD'],
  DR: ['DRIVE', 'DRIV', 'DRV'],
  DRS: ['DRIVES'],
  EST: ['ESTATE'],
  ESTS: ['ESTATES'],
  EXPY: ['EXPRESSWAY', 'EXP', 'EXPR', 'EXPRESS', 'EXPW'],
  EXT: ['EXTENSION', 'EXTN', 'EXTNSN'],
  EXTS: ['EXTENSIONS'],
  FALL: [],
  FLS: ['FALLS'],
  FRY: ['FERRY', 'FRRY'],
  FLD: ['FIELD'],
  FLDS: ['FIELDS'],
  FLT: ['FLAT'],
  FLTS: ['FLATS'],
  FRD: ['FORD'],
  FRDS: ['FORDS'],
  FRST: ['FOREST', 'FORESTS'],
  FRG: ['FORGE', 'FORG'],
  FRGS: ['FORGES'],
  FRK: ['FORK'],
  FRKS: ['FORKS'],
  FT: ['FORT', 'FRT'],
  FWY: ['FREEWAY', 'FREEWY', 'FRWAY', 'FRWY'],
  GDN: ['GARDEN', 'GARDN', 'GRDEN', 'GRDN'],
  GDNS: ['GARDENS', 'GRDNS'],
  GTWY: ['GATEWAY', 'GATEWY', 'GATWAY', 'GTWAY'],
  GLN: ['GLEN'],
  GLNS: ['GLENS'],
  GRN: ['GREEN'],
  GRNS: ['GREENS'],
  GRV: ['GROVE', 'GROV'],
  GRVS: ['GROVES'],
  HBR: ['HARBOR', 'HARB', 'HARBR', 'HRBOR'],
  HBRS: ['HARBORS'],
  HVN: ['HAVEN'],
  HTS: ['HEIGHTS', 'HT'],
  HWY: ['HIGHWAY', 'HIGHWY', 'HIWAY', 'HIWY', 'HWAY'],
  HL: ['HILL'],
  HLS: ['HILLS'],
  HOLW: ['HOLLOW', 'HLLW', 'HOLLOWS', 'HOLWS'],
  INLT: ['INLET'],
  IS: ['ISLAND', 'ISLND'],
  ISS: ['ISLANDS', 'ISLNDS'],
  ISLE: ['ISLES'],
  JCT: ['JUNCTION', 'JCTION', 'JCTN', 'JUNCTN', 'JUNCTON'],
  JCTS: ['JUNCTIONS', 'JCTNS'],
  KY: ['KEY'],
  KYS: ['KEYS'],
  KNL: ['KNOLL', 'KNOL'],
  KNLS: ['KNOLLS'],
  LK: ['LAKE'],
  LKS: ['LAKES'],
  LAND: [],
  LNDG: ['LANDING', 'LNDNG'],
  LN: ['LANE'],
  LGT: ['LIGHT'],
  LGTS: ['LIGHTS'],
  LF: ['LOAF'],
  LCK: ['LOCK'],
  LCKS: ['LOCKS'],
  LDG: ['LODGE', 'LDGE', 'LODG'],
  LOOP: ['LOOPS'],
  MALL: [],
  MNR: ['MANOR'],
  MNRS: ['MANORS'],
  MDW: ['MEADOW'],
  MDWS: ['MEADOWS', 'MEDOWS'],
  MEWS: [],
  ML: ['MILL'],
  MLS: ['MILLS'],
  MSN: ['MISSION', 'MISSN', 'MSSN'],
  MTWY: ['MOTORWAY'],
  MT: ['MOUNT', 'MNT'],
  MTN: ['MOUNTAIN', 'MNTAIN', 'MNTN', 'MOUNTIN', 'MTIN'],
  MTNS: ['MOUNTAINS', 'MNTNS'],
  NCK: ['NECK'],
  ORCH: ['ORCHARD', 'ORCHRD'],
  OVAL: ['OVL'],
  OPAS: ['OVERPASS'],
  PARK: ['PRK', 'PARKS'],
  PKWY: ['PARKWAY', 'PARKWY', 'PKWAY', 'PKY', 'PARKWAYS', 'PKWYS'],
  PASS: [],
  PSGE: ['PASSAGE'],
  PATH: ['PATHS'],
  PIKE: ['PIKES'],
  PNE: ['PINE'],
  PNES: ['PINES'],
  PL: ['PLACE'],
  PLN: ['PLAIN'],
  PLNS: ['PLAINS'],
  PLZ: ['PLAZA', 'PLZA'],
  PT: ['POINT'],
  PTS: ['POINTS'],
  PRT: ['PORT'],
  PRTS: ['PORTS'],
  PR: ['PRAIRIE', 'PRR'],
  RADL: ['RADIAL', 'RAD', 'RADIEL'],
  RAMP: [],
  RNCH: ['RANCH', 'RANCHES', 'RNCHS'],
  RPD: ['RAPID'],
  RPDS: ['RAPIDS'],
  RST: ['REST'],
  RDG: ['RIDGE', 'RDGE'],
  RDGS: ['RIDGES'],
  RIV: ['RIVER', 'RVR', 'RIVR'],
  RD: ['ROAD'],
  RDS: ['ROADS'],
  RTE: ['ROUTE'],
  ROW: [],
  RUE: [],
  RUN: [],
  SHL: ['SHOAL'],
  SHLS: ['SHOALS'],
  SHR: ['SHORE', 'SHOAR'],
  SHRS: ['SHORES', 'SHOARS'],
  SKWY: ['SKYWAY'],
  SPG: ['SPRING', 'SPNG', 'SPRNG'],
  SPGS: ['SPRINGS', 'SPNGS', 'SPRNGS'],
  SPUR: ['SPURS'],
  SQ: ['SQUARE', 'SQR', 'SQRE', 'SQU'],
  SQS: ['SQUARES', 'SQRS'],
  STA: ['STATION', 'STATN', 'STN'],
  STRA: ['STRAVENUE', 'STRAV', 'STRAVEN', 'STRAVN', 'STRVN', 'STRVNUE'],
  STRM: ['STREAM', 'STREME'],
  ST: ['STREET', 'STRT', 'STR'],
  STS: ['STREETS'],
  SMT: ['SUMMIT', 'SUMIT', 'SUMITT'],
  TER: ['TERRACE', 'TERR'],
  TRWY: ['THROUGHWAY'],
  TRCE: ['TRACE', 'TRACES'],
  TRAK: ['TRACK', 'TRACKS', 'TRK', 'TRKS'],
  TRFY: ['TRAFFICWAY'],
  TRL: ['TRAIL', 'TRAILS', 'TRLS'],
  TRLR: ['TRAILER'],
  TUNL: ['TUNNEL', 'TUNEL', 'TUNLS', 'TUNNELS', 'TUNNL'],
  TPKE: ['TURNPIKE', 'TRNPK', 'TURNPK'],
  UPAS: ['UNDERPASS'],
  UN: ['UNION'],
  UNS: ['UNIONS'],
  VLY: ['VALLEY', 'VALLY', 'VLLY'],
  VLYS: ['VALLEYS'],
  VIA: ['VIADUCT', 'VDCT', 'VIADCT'],
  VW: ['VIEW'],
  VWS: ['VIEWS'],
  VLG: ['VILLAGE', 'VILL', 'VILLAG', 'VILLG', 'VILLIAGE'],
  VLGS: ['VILLAGES'],
  VL: ['VILLE'],
  VIS: ['VISTA', 'VIST', 'VST', 'VSTA'],
  WALK: ['WALKS'],
  WALL: [],
  WAY: ['WY'],
  WAYS: [],
  WL: ['WELL'],
  WLS: ['WELLS'],
};

/** Section 233 / Appendix B directionals: one-word spellings → standard abbreviation. */
export const DIRECTIONAL_SPELLINGS: Readonly<Record<string, readonly string[]>> = {
  N: ['NORTH'],
  S: ['SOUTH'],
  E: ['EAST'],
  W: ['WEST'],
  NE: ['NORTHEAST'],
  NW: ['NORTHWEST'],
  SE: ['SOUTHEAST'],
  SW: ['SOUTHWEST'],
};

/**
 * Two-word directionals (`NORTH EAST`) are joined into the one-word spelling (`NORTHEAST`)
 * before parsing; where it lands (pre/post/name) is decided later like any other word.
 */
export const COMPOUND_DIRECTIONALS: Readonly<Record<string, string>> = {
  'NORTH EAST': 'NORTHEAST',
  'NORTH WEST': 'NORTHWEST',
  'SOUTH EAST': 'SOUTHEAST',
  'SOUTH WEST': 'SOUTHWEST',
};

export interface UnitDesignatorSpec {
  /** Spellings that fold into this designator (the standard abbreviation is implied). */
  readonly spellings: readonly string[];
  /** Pub 28 marks some designators as needing a number ("APT 4") and others as standalone ("REAR"). */
  readonly requiresRange: boolean;
  /** Also written as an ordinal before or after it: "28TH FLOOR", "FL 28TH" are "FL 28". */
  readonly takesOrdinal?: boolean;
}

/** Appendix C2, secondary unit designators. The few extra spellings (APPT, SP, FLR, …) are common in CRM data. */
export const UNIT_DESIGNATORS: Readonly<Record<string, UnitDesignatorSpec>> = {
  APT: { spellings: ['APARTMENT', 'APPT', 'APTMT'], requiresRange: true },
  BSMT: { spellings: ['BASEMENT'], requiresRange: false },
  BLDG: { spellings: ['BUILDING', 'BLD', 'BLDNG'], requiresRange: true },
  DEPT: { spellings: ['DEPARTMENT'], requiresRange: true },
  FL: { spellings: ['FLOOR', 'FLR'], requiresRange: true, takesOrdinal: true },
  FRNT: { spellings: ['FRONT'], requiresRange: false },
  HNGR: { spellings: ['HANGAR', 'HANGER'], requiresRange: true },
  KEY: { spellings: [], requiresRange: true },
  LBBY: { spellings: ['LOBBY'], requiresRange: false },
  LOT: { spellings: [], requiresRange: true },
  LOWR: { spellings: ['LOWER'], requiresRange: false },
  OFC: { spellings: ['OFFICE'], requiresRange: false },
  PH: { spellings: ['PENTHOUSE'], requiresRange: false },
  PIER: { spellings: [], requiresRange: true },
  REAR: { spellings: [], requiresRange: false },
  RM: { spellings: ['ROOM'], requiresRange: true },
  SIDE: { spellings: [], requiresRange: false },
  SLIP: { spellings: [], requiresRange: true },
  SPC: { spellings: ['SPACE', 'SP'], requiresRange: true },
  STOP: { spellings: [], requiresRange: true },
  STE: { spellings: ['SUITE', 'SUIT'], requiresRange: true },
  TRLR: { spellings: ['TRAILER'], requiresRange: true },
  UNIT: { spellings: ['UNT'], requiresRange: true },
  UPPR: { spellings: ['UPPER'], requiresRange: false },
};

/**
 * Designators that name the same unit: `APT 4`, `UNIT 4` and `# 4` are one apartment as mailers
 * write it. Every other designator is a unit of its own kind (`STE 4` is not `APT 4`), so only
 * these fold together in the address identity; the first is the one kept.
 */
export const INTERCHANGEABLE_DESIGNATORS: readonly string[] = ['APT', 'UNIT', '#'];

/** Written between a designator and its number ("APT NO 4"); dropped because it carries nothing. */
export const UNIT_NUMBER_WORDS: readonly string[] = ['NO', 'NUM', 'NUMBER', 'NBR'];

/** Street-name words spelled out in highway-style names ("HWY 71" → "HIGHWAY 71", Pub 28 §234). */
export const HIGHWAY_WORDS: readonly string[] = ['HIGHWAY', 'HWY', 'HIGHWY', 'HIWAY', 'HIWY', 'HWAY'];
export const COUNTY_WORDS: readonly string[] = ['COUNTY', 'CNTY', 'CO'];
export const ROAD_WORDS: readonly string[] = ['ROAD', 'RD'];

/**
 * Rural route (Pub 28 §24) and highway contract route (§25) spellings that open a delivery line,
 * folded into Pub 28's `RR 2 BOX 45` and `HC 1 BOX 12`. A star route is a highway contract route.
 */
export const ROUTE_PREFIXES: Readonly<Record<string, readonly (readonly string[])[]>> = {
  RR: [
    ['RURAL', 'ROUTE'],
    ['RURAL', 'RTE'],
    ['RURAL', 'RT'],
    ['RURAL', 'FREE', 'DELIVERY', 'ROUTE'],
    ['RURAL', 'FREE', 'DELIVERY'],
    ['RFD', 'ROUTE'],
    ['RFD', 'RTE'],
    ['RFD'],
    ['R', 'F', 'D'],
    ['R', 'R'],
    ['RURAL'],
    ['RR'],
  ],
  HC: [
    ['HIGHWAY', 'CONTRACT', 'ROUTE'],
    ['HIGHWAY', 'CONTRACT'],
    ['HWY', 'CONTRACT', 'ROUTE'],
    ['HWY', 'CONTRACT'],
    ['HC', 'ROUTE'],
    ['HCR'],
    ['HC'],
    ['STAR', 'ROUTE'],
    ['STAR', 'RTE'],
  ],
};

/**
 * A bare "ROUTE 2" is a road ("ROUTE 66"); it is a rural route only when a box follows
 * ("ROUTE 2 BOX 45"). So is "RD 2 BOX 45", the old "rural delivery" form still found in records.
 */
export const BOXED_ROUTE_WORDS: readonly string[] = ['ROUTE', 'RTE', 'RT', 'RD'];

/**
 * Military addresses (Pub 28 §23) write a unit and a box the same way: `PSC 1234 BOX 56`,
 * `CMR 450 BOX 2345`, `UNIT 2050 BOX 4190` (with APO/FPO/DPO as the city, AA/AE/AP as the state).
 */
export const MILITARY_BOX_UNITS: readonly string[] = ['PSC', 'CMR', 'UNIT'];

/** Suffixes of numbered roads that are not numbered streets: "71 HWY" is highway 71, not "71ST HWY". */
export const ROUTE_SUFFIXES: readonly string[] = ['HWY', 'FWY', 'EXPY', 'TPKE', 'BYP', 'RTE'];

/** Ways of writing "PO BOX" that are folded into it when they open the line. */
export const PO_BOX_PREFIXES: readonly (readonly string[])[] = [
  ['POST', 'OFFICE', 'BOX'],
  ['PO', 'BOX'],
  ['P', 'O', 'BOX'],
  ['POBOX'],
  ['POB'],
];

/** Appendix B: state and territory names → two-letter codes (codes themselves pass through). */
export const STATE_CODES: Readonly<Record<string, string>> = {
  ALABAMA: 'AL',
  ALASKA: 'AK',
  ARIZONA: 'AZ',
  ARKANSAS: 'AR',
  CALIFORNIA: 'CA',
  COLORADO: 'CO',
  CONNECTICUT: 'CT',
  DELAWARE: 'DE',
  'DISTRICT OF COLUMBIA': 'DC',
  FLORIDA: 'FL',
  GEORGIA: 'GA',
  HAWAII: 'HI',
  IDAHO: 'ID',
  ILLINOIS: 'IL',
  INDIANA: 'IN',
  IOWA: 'IA',
  KANSAS: 'KS',
  KENTUCKY: 'KY',
  LOUISIANA: 'LA',
  MAINE: 'ME',
  MARYLAND: 'MD',
  MASSACHUSETTS: 'MA',
  MICHIGAN: 'MI',
  MINNESOTA: 'MN',
  MISSISSIPPI: 'MS',
  MISSOURI: 'MO',
  MONTANA: 'MT',
  NEBRASKA: 'NE',
  NEVADA: 'NV',
  'NEW HAMPSHIRE': 'NH',
  'NEW JERSEY': 'NJ',
  'NEW MEXICO': 'NM',
  'NEW YORK': 'NY',
  'NORTH CAROLINA': 'NC',
  'NORTH DAKOTA': 'ND',
  OHIO: 'OH',
  OKLAHOMA: 'OK',
  OREGON: 'OR',
  PENNSYLVANIA: 'PA',
  'RHODE ISLAND': 'RI',
  'SOUTH CAROLINA': 'SC',
  'SOUTH DAKOTA': 'SD',
  TENNESSEE: 'TN',
  TEXAS: 'TX',
  UTAH: 'UT',
  VERMONT: 'VT',
  VIRGINIA: 'VA',
  WASHINGTON: 'WA',
  'WEST VIRGINIA': 'WV',
  WISCONSIN: 'WI',
  WYOMING: 'WY',
  'AMERICAN SAMOA': 'AS',
  GUAM: 'GU',
  'NORTHERN MARIANA ISLANDS': 'MP',
  'PUERTO RICO': 'PR',
  'VIRGIN ISLANDS': 'VI',
  'US VIRGIN ISLANDS': 'VI',
  'FEDERATED STATES OF MICRONESIA': 'FM',
  'MARSHALL ISLANDS': 'MH',
  PALAU: 'PW',
  // Military "states" (Pub 28 §23), used with the APO/FPO/DPO "cities".
  'ARMED FORCES AMERICAS': 'AA',
  'ARMED FORCES EUROPE': 'AE',
  'ARMED FORCES AFRICA': 'AE',
  'ARMED FORCES CANADA': 'AE',
  'ARMED FORCES MIDDLE EAST': 'AE',
  'ARMED FORCES PACIFIC': 'AP',
};
