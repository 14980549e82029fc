"""The words of the tool surface, declared once: memory types, states, trusts, scopes, recall modes, update
ops, forget modes, conflict resolutions.

The models use the enums, the MCP schemas build their `Literal`s from these tuples and the CLI offers them
as choices, so adding a word here is the one change that reaches every edge.
"""

from __future__ import annotations

from enum import StrEnum

from .fields import EDIT_FIELDS


class MemoryType(StrEnum):
    FACT = "fact"
    PREFERENCE = "preference"
    DECISION = "decision"
    EPISODE = "episode"
    REFERENCE = "reference"
    KNOWLEDGE = "knowledge"
    HANDOFF = "handoff"  # reserved: at most one active per store; a new one supersedes the previous


class State(StrEnum):
    ACTIVE = "active"
    ARCHIVED = "archived"
    DEPRECATED = "deprecated"


class Trust(StrEnum):
    USER_STATED = "user-stated"
    AGENT_INFERRED = "agent-inferred"
    IMPORTED = "imported"
    CONFIRMED = "confirmed"  # only a person gives it (PERSON_TRUSTS): the CLI, the browser view, a hand edit


TYPES = tuple(t.value for t in MemoryType)
STATES = tuple(s.value for s in State)
TRUSTS = tuple(t.value for t in Trust)
# trust levels only a person gives (the CLI, the browser view, a hand edit): a tool call asking for one is refused
PERSON_TRUSTS = (Trust.CONFIRMED.value,)
TOOL_TRUSTS = tuple(t for t in TRUSTS if t not in PERSON_TRUSTS)  # what the MCP tools offer
SCOPES = ("local", "global")  # the project's store, the account's store
RECALL_MODES = ("auto", "bm25", "hybrid")
# each op of memory_update and the fields it takes: any other field given is refused, naming the op
UPDATE_OP_FIELDS = {
    "edit": ("title", "body", *EDIT_FIELDS, "expected_sha256"),
    "supersede": ("by",),
    "set_state": ("state", "reason"),
    "link": ("other_id",),
    "resolve_conflict": ("pair_hash", "other_id", "resolution", "winner", "note"),
}
UPDATE_OPS = tuple(UPDATE_OP_FIELDS)
FORGET_MODES = ("archive", "deprecate", "purge")
RESOLUTIONS = ("keep_both", "supersede")


# ---------------------------------------------------------------- the words of statements (the conflict gate)
# Declared here once, raw (the gate folds and stems them when it loads); en, ko and es side by side.

# Verbs and fillers so generic that "X uses A" and "X uses B" share no attribute ("uses Tailwind" / "uses Sentry").
GENERIC_WORDS = """use uses used using usa usan usar utiliza utilizan usamos want wants wanted prefer prefers
preferred like likes liked prefiere prefieren quiere quieren gusta run runs running ran corre corren need needs
must should get gets have has make makes keep kept go goes going its it's our we they also every ya mas más muy
este esta esto estos estas ese esa eso hay está están ser sea todo todos pero sobre cada solo también nos mi tu
a al del is are be set sets happen happens happened done does do la el los las se con por para en es son per
desde hasta last next today yesterday tomorrow tonight ago since until
한 한다 하 하는 했다 했 것 수 등 및 있 있다 이다 된다 되 쓴 쓰 사용 선호 좋아 좋아한다 하는 때 에게는 에게""".split()

# Replacement cues: the new statement says an old value was replaced. Latin ones match whole words.
REPLACEMENT_CUES = """now|instead of|no longer|not anymore|anymore|moved|moves|moving|migrated|migrates|switched|switches
|replaced|replaces|changed|changes|lowered|raised|increased|reduced|upgraded|downgraded|from now on|ahora|ya no
|en lugar de|en vez de|cambio|cambió|cambiamos|se migró|migramos|pasa a|pasamos a|dejó de|sustituye|reemplaza
|actualizado|actualizamos|이제|대신|더 이상|더이상|바꿨|바꾼|바꾸|변경|옮겼|옮긴|이전했|전환|늘렸|줄였|올렸|낮췄|업그레이드
|took over|taken over|takes over|taking over|handed over|handed off|stepped down|again|these days|from today
|going forward|as of|starting|dropped|retired|decommissioned|swapped|stopped|gave up|bumped|rescheduled
|a partir de|desde hoy|desde ayer|desde este mes|de nuevo|otra vez|últimamente|ha dejado de|dejamos|nos pasamos
|se muda|se mudó|migrado|migrada|부터|요즘|앞으로|바뀜|바뀌|바꿈|갈아탐|갈아탔|교체|이관|이어받|인수인계|다시"""

# One side negated and the other not flips a statement (Korean ones match inside words: 쓰지 않는다).
NEGATIONS = "not|never|no|don't|doesn't|isn't|aren't|won't|can't|cannot|without|nunca|sin|tampoco|않|없|말고|못 "
# The axis a denial is on: a negated statement that names no side of it ("No screen time on school nights") takes
# its "-" side against one that grants ("Kids can have an hour of tablet time"); a negated "+" word ("not
# permitted", "no se permiten") is its "-" side too.
PERMISSION_AXIS = "allowed"

WEEKDAYS = {  # in week order (a range "Tue-Thu", "lunes hasta viernes", "월~금" holds the days between)
    "mon": "monday mondays mon lunes 월요일",
    "tue": "tuesday tuesdays tue tues martes 화요일",
    "wed": "wednesday wednesdays wed miércoles 수요일",
    "thu": "thursday thursdays thu thur thurs jueves 목요일",
    "fri": "friday fridays fri viernes 금요일",
    "sat": "saturday saturdays sábado sábados 토요일",
    "sun": "sunday sundays domingo domingos 일요일",
}
# Day names read only in a range ("월~금", "화-목", "Thu-Sun"): alone they are other words (월 2회, the sun).
WEEKDAYS_IN_RANGES = {"mon": "월", "tue": "화", "wed": "수", "thu": "목", "fri": "금", "sat": "sat 토", "sun": "sun 일"}
# What joins the two ends of a range of days.
WEEKDAY_RANGE_JOINS = "- – ~ through thru until hasta"  # not "to" / "a": "from Tuesdays to Thursdays" is a move

# Units a number is measured in, by dimension and size in the dimension's base unit (seconds, bytes).
DURATION_UNITS = {
    1: "s sec secs second seconds segundo segundos 초",
    60: "min mins minute minutes minuto minutos 분",
    3600: "h hr hrs hour hours hora horas 시간",
    86400: "d day days día días dia dias 일",
    604800: "week weeks semana semanas 주",
    2592000: "month months mes meses 개월 달",
    31536000: "year years año años 년",
}
# Money: a number with a currency sign or word before or after it is a price ("$15.49/mo", "12,50 €", "2,400원");
# the currency itself is not compared, the amount is. A period joined to a price ("/mo", "a month", "al mes") is
# how often it is paid, not a duration of its own.
CURRENCY_SIGNS = "$ € £ ₩ ¥"
CURRENCY_WORDS = "eur euro euros usd dollar dollars dólar dólares gbp pound pounds libra libras krw won 원"
PRICE_PERIODS = "mo month mes year yr año week wk semana day día hour hr hora 월 달 년"
PRICE_PER = "/ a an per al por each every cada"
# Degrees after a number: a temperature ("37 °C", "18 grados", "25도").
DEGREES = "° degrees degree grados grado 도"
SIZE_UNITS = {1: "b byte bytes", 2**10: "kb kib", 2**20: "mb mib", 2**30: "gb gib 기가", 2**40: "tb tib"}
# Numbers written as words (only the unambiguous ones: "una" is also "a", Korean counters are also other words).
NUMBER_WORDS = {
    1: "one",
    2: "two dos",
    3: "three tres",
    4: "four cuatro",
    5: "five cinco",
    6: "six seis",
    7: "seven siete",
    8: "eight ocho",
    9: "nine nueve",
    10: "ten diez",
}

# Where a statement applies: two statements about different scopes of one attribute do not conflict.
STATEMENT_SCOPES = {
    "production": "production prod producción produccion 프로덕션 운영 상용 prd",
    "staging": "staging stage preprod preproducción 스테이징",
    "development": "development dev desarrollo 개발",
    "test": "qa pruebas 테스트환경",
    "frontend": "frontend front-end 프론트엔드 프론트",
    "backend": "backend back-end 백엔드",
    "eu": "eu europe european europa europeo europea 유럽",
    "us": "미국 estadounidense",
    "apac": "apac asia 아시아",
    "ios": "ios iphone ipad",
    "android": "android 안드로이드",
    "desktop": "desktop escritorio 데스크톱",
    "admin": "admin admins administrator administrators administrador administradores 관리자",
    "guest": "guest guests invitado invitados 게스트",
    "weekend": "weekend weekends finde 주말",
    "weekday": "weekday weekdays 평일",
    "night": "night nights overnight nighttime noche nocturno nocturna 야간",
    "read": "read reads lectura 읽기",
    "write": "write writes escritura 쓰기",
    "domestic": "domestic national nacional nacionales 국내",
    "international": "international internacional internacionales 해외",
    "spring": "spring primavera 봄학기",
    "fall": "fall autumn otoño 가을학기",
    "summer": "summer verano 여름",
    "winter": "winter invierno 겨울",
    "adult": "adult adults adultos 성인",
    "child": "child children kids niños infantil 어린이",
}
# Phrases that take a side as one word does; rewritten to that word before the words are read.
STANCE_PHRASES = {
    "turned off": "disabled",
    "switched off": "disabled",
    "turned on": "enabled",
    "switched on": "enabled",
    "opt-in": "optional",
    "opt in": "optional",
    "de tú": "tutear",
    "de tu": "tutear",
    "de usted": "usted",
    "en persona": "presencial",
    "in person": "onsite",
    "fines de semana": "finde",
    "fin de semana": "finde",
    "entre semana": "weekdays",
}

# Words that take a side on one axis: the same axis with the other side is a flipped stance (no negation needed).
STANCES = {
    ("enabled", "+"): "enabled enable enables activado activada habilitado habilitada 활성화 켜",
    ("enabled", "-"): "disabled disable disables desactivado desactivada deshabilitado deshabilitada 비활성화 꺼",
    # a modal that grants ("may", "can", "se puede", "가능") permits as "allowed" does
    ("allowed", "+"): "allowed allow allows permitted permitido permitida permitidos 허용 may can ok okay puede "
    "pueden podemos permite permiten 가능 괜찮",
    (
        "allowed",
        "-",
    ): "forbidden forbid prohibited banned bans disallowed blocked block blocks bloqueado bloqueada prohibido "
    "prohibida prohibidos 금지 차단 불가",
    ("required", "+"): "required mandatory obligatorio obligatoria 필수",
    ("required", "-"): "optional opcional 선택",
    ("strict", "+"): "strict stricter estricto estricta 엄격",
    ("strict", "-"): "lenient loose relaxed permissive laxo laxa flexible 느슨",
    ("merge", "squash"): "squash squashed squashing",
    ("merge", "rebase"): "rebase rebased rebasing",
    ("repo", "mono"): "monorepo",
    ("repo", "poly"): "polyrepo multirepo",
    ("quotes", "single"): "single-quoted single-quotes",
    ("quotes", "double"): "double-quoted double-quotes",
    ("length", "-"): "short shorter concise brief terse corta cortas corto cortos breve breves 짧 짧게 짧은 간결",
    (
        "length",
        "+",
    ): "long longer detailed verbose lengthy larga largas largo largos detallada detalladas extensa 긴 길게 자세",
    ("sync", "+"): "sync synchronous síncrona síncronas síncrono 동기 call calls llamada videollamada 화상 대면",
    ("sync", "-"): "async asynchronous asíncrona asíncronas asíncrono 비동기",
    ("register", "+"): "존댓말 formal formales usted 격식",
    ("register", "-"): "반말 informal casual tutear tuteo",
    ("daypart", "am"): "morning mornings mañana mañanas 오전 아침",
    ("daypart", "pm"): "afternoon afternoons evening evenings tarde tardes 오후 저녁",
    ("theme", "dark"): "dark oscuro oscura 다크",
    ("theme", "light"): "light claro clara 라이트",
    ("indent", "tab"): "tab tabs 탭 tabulador tabuladores tabulaciones",
    ("indent", "space"): "space spaces 스페이스 espacio espacios",
    ("place", "remote"): "remote remotely remoto remota 원격 재택",
    ("place", "onsite"): "onsite office in-person presencial 사무실 출근",
    ("visibility", "+"): "public público pública 공개",
    ("visibility", "-"): "private privado privada 비공개",
    ("automation", "+"): "automatic automatically automático automática 자동",
    ("automation", "-"): "manual manually 수동",
    ("frequency", "day"): "daily nightly diario diaria diariamente 매일 매일밤",
    ("frequency", "week"): "weekly semanal semanalmente 매주",
    ("frequency", "month"): "monthly mensual mensualmente 매월 매달",
}

# One attribute named in other words or another language ("owned by" / "responsable" / "담당자"). Not a thesaurus:
# the attributes memories of a software team keep stating, so keyword-only cross-language pairs meet on them.
CONCEPTS = {
    "owner": "owner owners own owns owned ownership maintainer maintainers maintains responsible lead leads "
    "responsable responsables dueño dueña encargado encargada 담당 담당자 책임자 오너 소유자 맡 맡는다",
    "timeout": "timeout timeouts espera 타임아웃 시간초과",
    "port": "port ports puerto puertos 포트",
    "replica": "replica replicas réplica réplicas 레플리카 복제본",
    "deploy": "deploy deploys deployed deploying deployment deployments release releases released ship ships "
    "despliegue despliegues desplegar despliega despliegan desplegamos desplegan 배포 릴리스 릴리즈 출시",
    "review": "review reviews reviewed reviewing revisión revisiones revisa revisan revisar 리뷰 검토",
    "limit": "limit limits límite límites 제한 한도",
    "memory": "memory ram memoria 메모리",
    "backup": "backup backups copia copias respaldo respaldos 백업",
    "disk": "disk disks disco discos 디스크",
    "session": "session sessions sesión sesiones 세션",
    "ttl": "ttl expiry expire expires expiration caducidad caduca caducan expira expiran 만료 유효기간",
    "retention": "retention retained kept retención conservan conserva guardan 보관 보존",
    "alert": "alert alerts alerting notification notifications alerta alertas 알림 경보",
    "language": "language languages idioma idiomas 언어",
    "indentation": "indentation indent indents indentación sangría 들여쓰기",
    "meeting": "meeting meetings standup standups reunión reuniones 회의 스탠드업",
    "version": "version versions versión versiones 버전",
    "database": "database databases db datos 데이터베이스",
    "region": "region regions región regiones 리전 지역",
    "answer": "answer answers reply replies response responses respond responds respuesta respuestas responde "
    "responder 답 답변 응답 대답 답한다",
    "approval": "approval approvals approve approving approves aprobación aprobaciones aprueba 승인",
    "request": "request requests petición peticiones solicitud solicitudes 요청",
    "lint": "lint lints linter linters linting 린트 린터",
    "format": "format formats formatter formatting formato formateo 포맷 포매터",
    "editor": "editor editors 에디터 편집기",
    "branch": "branch branches rama ramas 브랜치",
    "commit": "commit commits 커밋",
    "message": "message messages mensaje mensajes 메시지",
    "docs": "docs documentation documentación 문서",
    "ticket": "ticket tickets 티켓",
    "channel": "channel channels canal canales 채널",
    "timezone": "timezone timezones horaria 시간대",
    "cache": "cache caches caché 캐시",
    "build": "build builds compilación 빌드",
    "cluster": "cluster clusters clúster 클러스터",
    "node": "node nodes nodo nodos 노드",
    "password": "password passwords contraseña contraseñas 비밀번호 암호",
    "key": "key keys clave claves 키",
    "rotation": "rotation rotate rotates rotated rotación rotar rota 로테이션 교체",
    "cost": "cost costs price prices cuesta cuestan costo precio 비용 가격",
    "payment": "payment payments pago pagos 결제",
    "invoice": "invoice invoices factura facturas 청구서 인보이스",
    "search": "search búsqueda 검색",
    "service": "service services servicio servicios 서비스",
    "team": "team teams equipo equipos 팀",
    "server": "server servers servidor servidores 서버",
    "test": "test tests testing prueba 테스트",
    "host": "host hosts hosted hosting alojado aloja 호스팅",
    "api": "api apis",
    "rate": "rate rates tasa 속도",
    "minute": "minute minutes minuto minutos 분당",
    "user": "user users usuario usuarios 사용자 유저",
    "line": "line lines línea líneas",
    "length": "length longitud 길이",
    "worker": "worker workers 워커",
    "queue": "queue queues cola colas 큐",
    "storage": "storage stored store stores almacenamiento almacena guarda guardan 저장",
    "bucket": "bucket buckets 버킷",
    "export": "export exports exportación exporta 내보내기",
    "schedule": "schedule schedules horario horarios 일정 스케줄",
    "url": "url urls address addresses dirección 주소",
    "path": "path paths ruta 경로",
    "size": "size sizes tamaño 크기 용량",
    "max": "max maximum máximo máxima 최대",
    "min": "minimum mínimo mínima 최소",
    "upload": "upload uploads subida subidas 업로드",
    "auth": "auth authentication autenticación 인증",
    "contractor": "contractor contractors contratista contratistas 계약자",
    "due": "due vencen vence 마감 기한",
    "mode": "mode modo 모드",
    # everyday attributes (issue 42's blind sets: shops, clubs, clinics, households)
    "preference": "prefer prefers preferred preference preferences prefiero prefiere preferimos preferencia "
    "preferencias 선호",
    "discount": "discount discounts descuento descuentos 할인",
    "member": "member members membership socio socios socia miembro miembros 회원 멤버",
    "booking": "booking bookings booked reservation reservations reserve reserved cita citas reserva reservas 예약",
    "order": "order orders ordering ordered pedido pedidos 주문",
    "delivery": "delivery deliveries delivered courier shipping envío envíos mensajería 배송 택배",
}
# Concepts that name what a statement is about rather than which of its attributes: they do not make two
# statements about "the search service" share an attribute.
SUBJECT_CONCEPTS = frozenset("service team search server api user payment invoice".split())

# Closed classes of values: a statement naming one of them states that value ("commit messages in English").
VALUE_WORDS = {
    "language": {
        "en": "english inglés 영어",
        "ko": "korean coreano 한국어",
        "es": "spanish español castellano 스페인어",
        "ja": "japanese japonés 일본어",
        "zh": "chinese chino 중국어",
        "fr": "french francés 프랑스어",
        "de": "german alemán 독일어",
        "pt": "portuguese portugués 포르투갈어",
    },
}
