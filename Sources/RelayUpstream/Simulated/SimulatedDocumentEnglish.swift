import Foundation

extension SimulatedDocuments {
    /// The English sample: an original draft of a mutual non-disclosure agreement,
    /// written for StreamRelay (fictional parties, not legal advice).
    ///
    /// Shape: Markdown. A `#` title, a short preamble, the sentence
    /// "This draft has 10 clauses:" followed by a numbered outline, then headings
    /// exactly of the form `## Clause N — Title` (U+2014 em dash) for N = 1…10,
    /// paragraphs separated by blank lines, `---` section breaks on their own
    /// lines, bulleted and lettered lists, some `**bold**`, straight quotes and
    /// apostrophes only. About 3,000 tokens by `SimulatedTokenizer`.
    public static let englishNDA: String = #"""
    # Mutual Non-Disclosure Agreement (Draft for Review)

    This Mutual Non-Disclosure Agreement (the "Agreement") is entered into as of the Effective Date stated on the signature page by and between **Larkspur Harbor Analytics, Inc.**, a Delaware corporation ("Larkspur"), and **Quillmoor Systems Ltd.**, a company organized under the laws of England and Wales ("Quillmoor"). Larkspur and Quillmoor are each a "Party" and together the "Parties."

    This draft has 10 clauses:

    1. Definitions
    2. Purpose and Permitted Use
    3. Obligations of the Receiving Party
    4. Exclusions
    5. Compelled Disclosure
    6. Return and Destruction
    7. No License and No Warranty
    8. Term and Survival
    9. Remedies
    10. General Provisions

    The Parties wish to explore a possible collaboration on a data platform for regional logistics operators (the "Opportunity"). In the course of those discussions, each Party expects to share information that it considers confidential. The Parties therefore agree as follows.

    ---

    ## Clause 1 — Definitions

    In this Agreement, the following words have the meanings given below. Headings are for convenience only and do not affect interpretation.

    - **"Confidential Information"** means all information, in any form or medium, that a Party or any of its Affiliates discloses to the other Party in connection with the Opportunity, whether before or after the Effective Date, and that is marked or identified as confidential at the time of disclosure, or that a reasonable person would understand to be confidential given its nature and the circumstances of disclosure. It includes, without limitation, source code, model weights, data schemas, pricing, product roadmaps, customer lists, security assessments and the terms of this Agreement.
    - **"Disclosing Party"** means the Party that discloses Confidential Information, and **"Receiving Party"** means the Party that receives it. Each Party may act in both roles.
    - **"Affiliate"** means any entity that directly or indirectly controls, is controlled by, or is under common control with a Party, where "control" means ownership of more than fifty percent of the voting interests of the entity.
    - **"Representatives"** means a Party's and its Affiliates' directors, officers, employees, professional advisers and approved subcontractors who need to know the Confidential Information for the Purpose.
    - **"Effective Date"** means the date on which the last Party signs this Agreement.

    Information disclosed orally or visually is Confidential Information if the Disclosing Party identifies it as confidential at the time and confirms that identification in a written summary delivered within thirty (30) days after the disclosure. A failure to deliver the summary does not remove protection from information that is confidential by its nature.

    ## Clause 2 — Purpose and Permitted Use

    The Receiving Party shall use the Confidential Information solely to evaluate, negotiate and, if the Parties so decide, plan the Opportunity (the "Purpose"). No other use is permitted without the Disclosing Party's prior written consent.

    Without limiting the general rule above, the Receiving Party shall not:

    - use Confidential Information to develop, train, tune or benchmark any product, service or machine learning model, except as part of a pilot expressly described in a written work order signed by both Parties;
    - reverse engineer, decompile or disassemble any prototype, software or hardware provided under this Agreement;
    - contact the Disclosing Party's customers, suppliers or employees about the Opportunity, except through the contact persons named on the signature page; or
    - file any patent application that relies on or discloses the other Party's Confidential Information.

    Each Party remains free to pursue its own business, including projects that compete with the Opportunity, provided that it does so without using the other Party's Confidential Information.

    Where Confidential Information relates to pricing, customer terms or other competitively sensitive matters, the Receiving Party shall limit access to a small "clean team" of named individuals who are not directly involved in setting its own prices or bidding strategy. The Parties shall agree on the members of any clean team in writing before the first such disclosure.

    ## Clause 3 — Obligations of the Receiving Party

    The Receiving Party shall keep the Disclosing Party's Confidential Information in strict confidence and shall protect it with at least the same degree of care it uses for its own information of a similar nature, and in no event with less than reasonable care.

    The Receiving Party may disclose Confidential Information only to its Representatives who need to know it for the Purpose and who are bound by written obligations of confidentiality no less protective than those in this Agreement. The Receiving Party is responsible for any act or omission of its Representatives that would breach this Agreement if done by the Receiving Party itself.

    In particular, the Receiving Party shall:

    1. store Confidential Information in electronic form only on systems that enforce access control, encrypt data at rest, and keep access logs for at least twelve (12) months;
    2. not copy Confidential Information except as reasonably necessary for the Purpose, and reproduce all confidentiality notices on every copy;
    3. notify the Disclosing Party in writing without undue delay, and in any case within seventy-two (72) hours, after becoming aware of any unauthorized access to, use of or disclosure of Confidential Information; and
    4. cooperate in good faith with the Disclosing Party to contain and remedy any such incident, and to prevent it from happening again.

    **Personal data.** The Parties do not intend to exchange personal data under this Agreement. If either Party needs to share personal data for the Purpose, the Parties shall first agree in writing on the data protection terms that apply to that sharing.

    ---

    ## Clause 4 — Exclusions

    The obligations in Clauses 2 and 3 do not apply to information that the Receiving Party can show by contemporaneous written records:

    - (a) is or becomes generally available to the public other than as a result of a breach of this Agreement by the Receiving Party or its Representatives;
    - (b) was lawfully known to the Receiving Party, without an obligation of confidentiality, before the Disclosing Party disclosed it;
    - (c) is lawfully received from a third party who, to the Receiving Party's knowledge, is not under a duty of confidentiality to the Disclosing Party; or
    - (d) is independently developed by the Receiving Party's personnel who had no access to the Confidential Information.

    Confidential Information shall not be considered to fall within these exclusions merely because individual features of it are public or known to the Receiving Party, unless the combination itself and its principle of operation are public or known.

    ## Clause 5 — Compelled Disclosure

    If the Receiving Party or any of its Representatives is required by law, regulation, court order or the rules of a stock exchange to disclose any Confidential Information, the Receiving Party shall, to the extent legally permitted, give the Disclosing Party prompt written notice so that it may seek a protective order or other appropriate remedy.

    The Receiving Party shall reasonably assist the Disclosing Party, at the Disclosing Party's expense, in seeking such an order. If no order is obtained, the Receiving Party may disclose only that part of the Confidential Information that its legal counsel advises is legally required, and shall use reasonable efforts to obtain assurance that the information disclosed will be treated confidentially.

    A disclosure made in accordance with this Clause is not a breach of this Agreement, but the information disclosed remains Confidential Information for all other purposes.

    ## Clause 6 — Return and Destruction

    Within fifteen (15) business days after the Disclosing Party's written request, or after the termination of discussions about the Opportunity, whichever is earlier, the Receiving Party shall at its choice return or destroy all Confidential Information of the Disclosing Party in its possession or control, including all notes, analyses and summaries that contain or reflect it.

    On request, an officer of the Receiving Party shall confirm in writing that this Clause has been complied with. The Receiving Party is not required to purge copies held in automatic backup systems, or copies that it must keep to comply with law or a documented retention policy, provided that those copies:

    - remain subject to this Agreement for as long as they are kept;
    - are not restored or accessed except as required by law or for disaster recovery; and
    - are deleted in the ordinary course of the backup cycle.

    ## Clause 7 — No License and No Warranty

    All Confidential Information remains the property of the Disclosing Party. Nothing in this Agreement grants the Receiving Party any license or other right in any patent, copyright, trade secret, trademark or other intellectual property of the Disclosing Party, except the limited right to use Confidential Information for the Purpose.

    **CONFIDENTIAL INFORMATION IS PROVIDED "AS IS".** The Disclosing Party makes no representation or warranty, express or implied, as to its accuracy, completeness, performance or fitness for any purpose, and shall have no liability arising from its use, except as may be agreed in a definitive written agreement.

    Neither this Agreement nor the exchange of Confidential Information obliges either Party to continue discussions, to enter into any further agreement, or to refrain from dealing with third parties. Any commitment about the Opportunity will be binding only if it is set out in a definitive agreement signed by authorized officers of both Parties.

    ---

    ## Clause 8 — Term and Survival

    This Agreement begins on the Effective Date and covers disclosures made during the period of two (2) years after that date. Either Party may end the disclosure period earlier by giving thirty (30) days' written notice to the other Party.

    The Receiving Party's obligations for each item of Confidential Information continue for five (5) years after the end of the disclosure period. For information that qualifies as a trade secret under applicable law, the obligations continue for as long as the information remains a trade secret.

    Clauses 4, 5, 6, 7, 9 and 10, and any rights or remedies that accrued before termination, survive any expiry or termination of this Agreement.

    ## Clause 9 — Remedies

    Each Party acknowledges that unauthorized use or disclosure of the other Party's Confidential Information may cause harm for which money damages alone would not be an adequate remedy. Accordingly, the Disclosing Party is entitled to seek injunctive relief, specific performance or other equitable relief to prevent or stop a threatened or actual breach, without proof of actual damages and without posting a bond, in addition to any other remedy available at law or in equity.

    The Receiving Party shall indemnify the Disclosing Party against reasonable legal fees and costs incurred in successfully enforcing this Agreement against the Receiving Party or its Representatives.

    Nothing in this Agreement limits either Party's liability for fraud, or for a willful or grossly negligent breach of its confidentiality obligations.

    ## Clause 10 — General Provisions

    **Notices.** Notices under this Agreement must be in writing and delivered by hand, by recognized courier, or by email with confirmation of receipt, to the addresses shown on the signature page. A notice is effective when received.

    **Entire agreement.** This Agreement is the entire agreement between the Parties about its subject matter and replaces any earlier understanding about the confidentiality of information exchanged for the Opportunity. It may be amended only in a writing signed by both Parties.

    **Assignment.** Neither Party may assign this Agreement without the other Party's prior written consent, except to a successor to all or substantially all of its business that agrees in writing to be bound by it.

    **Severability and waiver.** If any provision is held invalid or unenforceable, the rest of this Agreement remains in force. A failure or delay in exercising a right is not a waiver of that right.

    **No publicity.** Neither Party shall announce or publicly refer to the Opportunity, the discussions between the Parties or the existence of this Agreement without the other Party's prior written approval, except as required by law under Clause 5.

    **Relationship of the Parties.** The Parties are independent contractors. Nothing in this Agreement creates a partnership, joint venture, agency or employment relationship, and neither Party may bind the other to any obligation.

    **Export control.** Each Party shall comply with all export control and sanctions laws that apply to the Confidential Information it receives.

    **Governing law and jurisdiction.** This Agreement is governed by the laws of the State of New York, without regard to its conflict of laws rules. The courts located in New York County have exclusive jurisdiction over any dispute arising out of it, except that either Party may seek injunctive relief in any court of competent jurisdiction.

    **Counterparts.** This Agreement may be signed in counterparts, including by electronic signature, each of which is an original and all of which together are one instrument.

    ---

    **Signature page**

    Signed by the authorized representatives of the Parties:

    - For Larkspur Harbor Analytics, Inc.: Name ____________, Title ____________, Date ____________
    - For Quillmoor Systems Ltd.: Name ____________, Title ____________, Date ____________

    *Drafting note: this is a negotiation draft. The disclosure period in Clause 8 and the governing law in Clause 10 are still open for discussion between the Parties' counsel.*
    """#
}
