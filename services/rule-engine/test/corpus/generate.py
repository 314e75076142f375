"""Regenerates the corpus .eml files and expected.json (python3 generate.py). The files are committed;
this script documents how the charset-specific bytes were made."""
import base64, json, os, quopri
D = os.path.dirname(os.path.abspath(__file__))
expected = {}
def w(name, data, exp):
    if isinstance(data, str):
        data = data.encode("utf-8")
    # CRLF everywhere unless the case is about bare LF
    if not name.startswith("26-"):
        data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    open(os.path.join(D, name), "wb").write(data)
    expected[name] = exp

DATE = "Date: Tue, 10 Nov 2026 09:15:00 +0100\n"
def b64(b, width=76):
    s = base64.b64encode(b).decode()
    return "\n".join(s[i:i+width] for i in range(0, len(s), width))
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
PDF = b"%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"

w("01-plain-ascii.eml", f"""From: Alice Example <alice@example.com>
To: bob@example.org
Subject: Plain text
Message-ID: <01.plain@example.com>
{DATE}MIME-Version: 1.0
Content-Type: text/plain; charset=us-ascii

Hello Bob,
just plain text.
""", {"subject": "Plain text", "fromAddress": "alice@example.com", "toAddresses": ["bob@example.org"], "messageId": "<01.plain@example.com>", "text": "just plain text.", "attachments": []})

w("02-multipart-alternative.eml", f"""From: "Newsletter" <news@shop.example>
To: Customer <customer@example.org>
Subject: Your weekly offers
Message-ID: <02.alt@shop.example>
{DATE}MIME-Version: 1.0
Content-Type: multipart/alternative; boundary="alt-b"

--alt-b
Content-Type: text/plain; charset=utf-8

Offers: 20% off.
--alt-b
Content-Type: text/html; charset=utf-8

<html><body><p>Offers: <b>20% off</b>.</p></body></html>
--alt-b--
""", {"subject": "Your weekly offers", "fromAddress": "news@shop.example", "toAddresses": ["customer@example.org"], "text": "Offers: 20% off.", "html": "<b>20% off</b>", "attachments": []})

w("03-nested-multipart.eml", f"""From: Carol <carol@example.com>
To: dave@example.org
Subject: Report with logo and PDF
Message-ID: <03.nested@example.com>
{DATE}MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="outer"

--outer
Content-Type: multipart/alternative; boundary="inner"

--inner
Content-Type: text/plain; charset=utf-8

See the report.
--inner
Content-Type: multipart/related; boundary="rel"

--rel
Content-Type: text/html; charset=utf-8

<p>See the report. <img src="cid:logo@example.com"></p>
--rel
Content-Type: image/png
Content-ID: <logo@example.com>
Content-Disposition: inline; filename="logo.png"
Content-Transfer-Encoding: base64

{b64(PNG)}
--rel--
--inner--
--outer
Content-Type: application/pdf; name="report.pdf"
Content-Disposition: attachment; filename="report.pdf"
Content-Transfer-Encoding: base64

{b64(PDF)}
--outer--
""", {"subject": "Report with logo and PDF", "text": "See the report.", "html": "cid:logo@example.com", "attachments": [{"filename": "logo.png", "contentType": "image/png", "size": len(PNG), "disposition": "inline", "contentId": "logo@example.com"}, {"filename": "report.pdf", "contentType": "application/pdf", "size": len(PDF), "disposition": "attachment"}]})

w("04-attachment-pdf.eml", f"""From: scanner@office.example
To: archive@example.org
Subject: Scan 0042
Message-ID: <04.scan@office.example>
{DATE}MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="----=_Part_0_1"

------=_Part_0_1
Content-Type: text/plain; charset=UTF-8
Content-Transfer-Encoding: 7bit

Scanned document attached.
------=_Part_0_1
Content-Type: application/pdf; name=scan0042.pdf
Content-Transfer-Encoding: base64
Content-Disposition: attachment; filename=scan0042.pdf

{b64(PDF * 20)}
------=_Part_0_1--
""", {"subject": "Scan 0042", "text": "Scanned document attached.", "attachments": [{"filename": "scan0042.pdf", "contentType": "application/pdf", "size": len(PDF) * 20}]})

w("05-inline-image.eml", f"""From: Erin <erin@example.com>
To: frank@example.org
Subject: Photo
Message-ID: <05.inline@example.com>
{DATE}MIME-Version: 1.0
Content-Type: multipart/related; boundary="r5"; type="text/html"

--r5
Content-Type: text/html; charset=utf-8

<p>Look:</p><img src="cid:img1">
--r5
Content-Type: image/png; name="pic.png"
Content-ID: <img1>
Content-Transfer-Encoding: base64

{b64(PNG)}
--r5--
""", {"subject": "Photo", "html": "cid:img1", "attachments": [{"filename": "pic.png", "contentType": "image/png", "size": len(PNG), "contentId": "img1"}]})

latin = "Café crème à la façon de Noël – prix: 5 €?".replace("–", "-").replace("€", "EUR")
w("06-iso-8859-1-body.eml", (f"""From: =?ISO-8859-1?Q?Fran=E7ois?= <francois@example.fr>
To: ami@example.org
Subject: =?ISO-8859-1?Q?Caf=E9_cr=E8me?=
Message-ID: <06.latin1@example.fr>
{DATE}MIME-Version: 1.0
Content-Type: text/plain; charset=ISO-8859-1
Content-Transfer-Encoding: quoted-printable

""").encode() + quopri.encodestring(latin.encode("latin-1")) + b"\n",
  {"subject": "Café crème", "fromAddress": "francois@example.fr", "fromName": "François", "text": latin, "attachments": []})

sj = "お世話になっております。請求書を送付いたします。"
w("07-shift-jis-body.eml", (f"""From: =?ISO-2022-JP?B?GyRCRURDZhsoQg==?= <tanaka@example.jp>
To: yamada@example.org
Subject: =?ISO-2022-JP?B?GyRCQEE1YT1xJE4kNEF3SVUbKEI=?=
Message-ID: <07.sjis@example.jp>
{DATE}MIME-Version: 1.0
Content-Type: text/plain; charset=Shift_JIS
Content-Transfer-Encoding: 8bit

""").encode() + sj.encode("shift_jis") + b"\n", {"subject": "請求書のご送付", "fromName": "田中", "text": sj, "attachments": []})

w("08-encoded-word-b.eml", f"""From: sender@example.com
To: rcpt@example.org
Subject: =?UTF-8?B?8J+OiSBQYXJ0eSB0aW1lIOKAkyDDvGJlcnJhc2NodW5nIQ==?=
Message-ID: <08.ew@example.com>
{DATE}
Body.
""", {"subject": "🎉 Party time – überraschung!", "text": "Body.", "attachments": []})

w("09-encoded-words-adjacent.eml", f"""From: sender@example.com
To: rcpt@example.org
Subject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?= =?UTF-8?Q?_aus_M=C3=BCnchen?= und Umgebung
Message-ID: <09.ew2@example.com>
{DATE}
Servus.
""", {"subject": "Grüße aus München und Umgebung", "text": "Servus.", "attachments": []})

w("10-missing-message-id.eml", f"""From: legacy@old-mta.example
To: rcpt@example.org
Subject: No id here
{DATE}
An old mailer forgot the Message-ID.
""", {"subject": "No id here", "generatedMessageId": True, "text": "forgot the Message-ID", "attachments": []})

many = ", ".join(f"user{i}@example.org" for i in range(40))
long_subject = "This is a very long subject line that goes on and on " * 6
folded_to = many.replace(", ", ",\n\t")
w("11-long-header-lines.eml", f"""From: bulk@example.com
To: {folded_to}
Subject: {long_subject.strip()}
Message-ID: <11.long@example.com>
X-Long-Header: {"x" * 1500}
{DATE}
Long headers.
""", {"subject": long_subject.strip(), "toCount": 40, "text": "Long headers.", "attachments": []})

w("12-malformed-boundary-unclosed.eml", f"""From: broken@example.com
To: rcpt@example.org
Subject: Unclosed multipart
Message-ID: <12.unclosed@example.com>
{DATE}MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="never-closed"

--never-closed
Content-Type: text/plain

The closing boundary is missing.
--never-closed
Content-Type: text/csv; name="data.csv"
Content-Disposition: attachment; filename="data.csv"

a,b
1,2
""", {"subject": "Unclosed multipart", "text": "The closing boundary is missing.", "attachments": [{"filename": "data.csv", "contentType": "text/csv"}]})

w("13-malformed-boundary-mismatch.eml", f"""From: broken@example.com
To: rcpt@example.org
Subject: Boundary mismatch
Message-ID: <13.mismatch@example.com>
{DATE}MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="declared"

--actual
Content-Type: text/plain

The parts use a boundary that was never declared.
--actual--
""", {"subject": "Boundary mismatch", "attachments": []})

w("14-no-content-type.eml", f"""From: minimal@example.com
To: rcpt@example.org
Subject: Minimal
Message-ID: <14.min@example.com>

No MIME headers at all.
""", {"subject": "Minimal", "text": "No MIME headers at all.", "attachments": []})

cp = "Smart quotes “like these” and an ellipsis…"
w("15-windows-1252.eml", (f"""From: outlook@example.com
To: rcpt@example.org
Subject: =?Windows-1252?Q?=93Quoted=94?=
Message-ID: <15.cp1252@example.com>
{DATE}MIME-Version: 1.0
Content-Type: text/plain; charset=windows-1252
Content-Transfer-Encoding: 8bit

""").encode() + cp.encode("cp1252") + b"\n", {"subject": "“Quoted”", "text": cp, "attachments": []})

ru = "Привет! Это письмо в кодировке KOI8-R."
w("16-koi8-r.eml", (f"""From: ivan@example.ru
To: rcpt@example.org
Subject: =?KOI8-R?B?{base64.b64encode("Привет".encode("koi8-r")).decode()}?=
Message-ID: <16.koi8@example.ru>
{DATE}MIME-Version: 1.0
Content-Type: text/plain; charset=KOI8-R
Content-Transfer-Encoding: 8bit

""").encode() + ru.encode("koi8-r") + b"\n", {"subject": "Привет", "text": ru, "attachments": []})

w("17-utf8-8bit-body.eml", f"""From: Zoë <zoe@example.com>
To: rcpt@example.org
Subject: 8-bit UTF-8
Message-ID: <17.utf8@example.com>
{DATE}MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: 8bit

Naïve café — ünïcödé ✓ 日本語
""", {"subject": "8-bit UTF-8", "text": "Naïve café — ünïcödé ✓ 日本語", "attachments": []})

w("18-base64-text.eml", f"""From: app@example.com
To: rcpt@example.org
Subject: Base64 body
Message-ID: <18.b64@example.com>
{DATE}MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: base64

{b64("Decoded from base64 — ok.".encode())}
""", {"subject": "Base64 body", "text": "Decoded from base64 — ok.", "attachments": []})

w("19-html-only.eml", f"""From: marketing@example.com
To: rcpt@example.org
Subject: HTML only
Message-ID: <19.html@example.com>
{DATE}MIME-Version: 1.0
Content-Type: text/html; charset=utf-8

<html><body><h1>Sale</h1><p>Everything must go.</p></body></html>
""", {"subject": "HTML only", "html": "<h1>Sale</h1>", "text": "Everything must go.", "attachments": []})

ics = "BEGIN:VCALENDAR\nVERSION:2.0\nMETHOD:REQUEST\nBEGIN:VEVENT\nUID:1@example.com\nSUMMARY:Sync\nDTSTART:20261112T100000Z\nEND:VEVENT\nEND:VCALENDAR\n"
w("20-calendar-invite.eml", f"""From: calendar@example.com
To: rcpt@example.org
Subject: Invitation: Sync
Message-ID: <20.cal@example.com>
{DATE}MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="cal"

--cal
Content-Type: text/plain; charset=utf-8

You are invited.
--cal
Content-Type: text/calendar; charset=utf-8; method=REQUEST; name="invite.ics"
Content-Disposition: attachment; filename="invite.ics"

{ics}
--cal--
""", {"subject": "Invitation: Sync", "text": "You are invited.", "attachments": [{"filename": "invite.ics", "contentType": "text/calendar"}]})

w("21-forwarded-rfc822.eml", f"""From: fwd@example.com
To: rcpt@example.org
Subject: Fwd: original
Message-ID: <21.fwd@example.com>
{DATE}MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="fw"

--fw
Content-Type: text/plain

See the forwarded message.
--fw
Content-Type: message/rfc822
Content-Disposition: attachment; filename="original.eml"

From: someone@else.example
To: fwd@example.com
Subject: original
Message-ID: <orig@else.example>

Original body.
--fw--
""", {"subject": "Fwd: original", "text": "See the forwarded message.", "attachmentsMin": 1})

w("22-bounce-dsn.eml", f"""From: MAILER-DAEMON@mx.example.net
To: rcpt@example.org
Subject: Undelivered Mail Returned to Sender
Message-ID: <22.dsn@mx.example.net>
{DATE}MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="dsn"

--dsn
Content-Type: text/plain

This is the mail system. Your message could not be delivered.
--dsn
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.net
Final-Recipient: rfc822; gone@example.net
Action: failed
Status: 5.1.1
--dsn
Content-Type: text/rfc822-headers

From: rcpt@example.org
Subject: hello
--dsn--
""", {"subject": "Undelivered Mail Returned to Sender", "text": "could not be delivered", "fromAddress": "mailer-daemon@mx.example.net"})

w("23-cc-and-groups.eml", f"""From: Team Lead <lead@example.com>
To: undisclosed-recipients:;
Cc: "Doe, Jane" <jane@example.org>, John <JOHN@Example.ORG>, Team: a@example.org, b@example.org;
Subject: Group syntax
Message-ID: <23.groups@example.com>
{DATE}
Hi all.
""", {"subject": "Group syntax", "toAddresses": [], "ccAddresses": ["jane@example.org", "john@example.org", "a@example.org", "b@example.org"], "text": "Hi all."})

w("24-reply-with-references.eml", f"""From: bob@example.org
To: alice@example.com
Subject: Re: Plain text
Message-ID: <24.reply@example.org>
In-Reply-To: <01.plain@example.com>
References: <00.root@example.com>
 <01.plain@example.com>
{DATE}
Thanks!

> Hello Bob,
""", {"subject": "Re: Plain text", "inReplyTo": "<01.plain@example.com>", "references": ["<00.root@example.com>", "<01.plain@example.com>"], "text": "Thanks!"})

w("25-rfc2231-filename.eml", f"""From: sender@example.com
To: rcpt@example.org
Subject: RFC 2231 filename
Message-ID: <25.rfc2231@example.com>
{DATE}MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="f"

--f
Content-Type: text/plain

File attached.
--f
Content-Type: application/vnd.openxmlformats-officedocument.spreadsheetml.sheet
Content-Disposition: attachment; filename*=UTF-8''Bilanz%20%C3%9Cbersicht%202026.xlsx
Content-Transfer-Encoding: base64

{b64(b"PK" + bytes(100))}
--f--
""", {"subject": "RFC 2231 filename", "attachments": [{"filename": "Bilanz Übersicht 2026.xlsx", "contentType": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "size": 102}]})

w("26-lf-only-line-endings.eml", f"""From: unix@example.com
To: rcpt@example.org
Subject: Bare LF line endings
Message-ID: <26.lf@example.com>
{DATE}MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="lf"

--lf
Content-Type: text/plain

Written by a Unix tool.
--lf
Content-Type: text/plain; name="notes.txt"
Content-Disposition: attachment; filename="notes.txt"

note one
--lf--
""", {"subject": "Bare LF line endings", "text": "Written by a Unix tool.", "attachments": [{"filename": "notes.txt", "contentType": "text/plain"}]})

w("27-encoded-word-filename.eml", f"""From: sender@example.com
To: rcpt@example.org
Subject: Encoded filename
Message-ID: <27.ewfile@example.com>
{DATE}MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="e"

--e
Content-Type: text/plain

Attached.
--e
Content-Type: image/jpeg; name="=?UTF-8?B?w6l0w6kuanBn?="
Content-Disposition: attachment; filename="=?UTF-8?B?w6l0w6kuanBn?="
Content-Transfer-Encoding: base64

{b64(bytes([0xff, 0xd8, 0xff, 0xe0]) + bytes(60))}
--e--
""", {"subject": "Encoded filename", "attachments": [{"filename": "été.jpg", "contentType": "image/jpeg", "size": 64}]})

w("28-mailing-list.eml", f"""From: Poster <poster@example.com>
To: dev-list@lists.example.org
Reply-To: dev-list@lists.example.org
Subject: [dev] Release 2.0
Message-ID: <28.list@example.com>
List-Id: Developers <dev.lists.example.org>
List-Unsubscribe: <mailto:dev-unsubscribe@lists.example.org>, <https://lists.example.org/u>
Precedence: list
{DATE}
Release notes follow.
""", {"subject": "[dev] Release 2.0", "replyTo": ["dev-list@lists.example.org"], "headerKeys": ["list-id", "list-unsubscribe"], "text": "Release notes follow."})

w("29-format-flowed.eml", f"""From: thunderbird@example.com
To: rcpt@example.org
Subject: Flowed
Message-ID: <29.flowed@example.com>
{DATE}MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8; format=flowed; delsp=no

This paragraph is long and was soft 
wrapped by the sender's client.
""", {"subject": "Flowed", "text": "This paragraph is long and was soft wrapped by the sender's client."})

gb = "你好，这是一封测试邮件。"
w("30-gb2312.eml", (f"""From: wang@example.cn
To: rcpt@example.org
Subject: =?GB2312?B?{base64.b64encode("测试邮件".encode("gb2312")).decode()}?=
Message-ID: <30.gb@example.cn>
{DATE}MIME-Version: 1.0
Content-Type: text/plain; charset=GB2312
Content-Transfer-Encoding: base64

""").encode() + b64(gb.encode("gb2312")).encode() + b"\n", {"subject": "测试邮件", "text": gb})

w("31-empty-body.eml", f"""From: sender@example.com
To: rcpt@example.org
Subject: (empty)
Message-ID: <31.empty@example.com>
{DATE}
""", {"subject": "(empty)", "textBody": "", "attachments": []})

w("32-tnef-winmail.eml", f"""From: exchange@corp.example
To: rcpt@example.org
Subject: Meeting notes
Message-ID: <32.tnef@corp.example>
{DATE}MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="tn"

--tn
Content-Type: text/plain; charset="us-ascii"

Notes attached.
--tn
Content-Type: application/ms-tnef; name="winmail.dat"
Content-Disposition: attachment; filename="winmail.dat"
Content-Transfer-Encoding: base64

{b64(bytes([0x78, 0x9f, 0x3e, 0x22]) + bytes(28))}
--tn--
""", {"subject": "Meeting notes", "attachments": [{"filename": "winmail.dat", "contentType": "application/ms-tnef", "size": 32}]})

qp_long = "A line that is longer than seventy-six characters and therefore needs a soft line break in quoted-printable."
w("33-quoted-printable-soft-breaks.eml", (f"""From: sender@example.com
To: rcpt@example.org
Subject: QP soft breaks
Message-ID: <33.qp@example.com>
{DATE}MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: quoted-printable

""").encode() + quopri.encodestring(qp_long.encode()) + b"\n", {"subject": "QP soft breaks", "text": qp_long})

w("34-odd-from-comment.eml", f"""FROM: "Support (no reply)" <NoReply@Service.Example> (automated)
TO: Rcpt@Example.ORG
SUBJECT: Case-insensitive header names
MESSAGE-ID: <34.case@service.example>
{DATE}
Body.
""", {"subject": "Case-insensitive header names", "fromAddress": "noreply@service.example", "toAddresses": ["rcpt@example.org"], "messageId": "<34.case@service.example>"})

big5 = "這是繁體中文的郵件內容。"
w("35-big5.eml", (f"""From: chen@example.tw
To: rcpt@example.org
Subject: =?Big5?B?{base64.b64encode("測試".encode("big5")).decode()}?=
Message-ID: <35.big5@example.tw>
{DATE}MIME-Version: 1.0
Content-Type: text/plain; charset=Big5
Content-Transfer-Encoding: 8bit

""").encode() + big5.encode("big5") + b"\n", {"subject": "測試", "text": big5})

json.dump(expected, open(os.path.join(D, "expected.json"), "w"), ensure_ascii=False, indent=1, sort_keys=True)
print(len(expected))
