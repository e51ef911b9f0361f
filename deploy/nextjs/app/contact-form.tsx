"use client";

// The contact form under /contact. It sends nothing: a submit only says so. The fields
// are uncontrolled, so that a script filling them (the sitetools bridge's
// prefill_contact_form sets .value and dispatches input events) is never overwritten.
import { useState, type FormEvent } from "react";

export default function ContactForm() {
  const [status, setStatus] = useState("");

  function onSubmit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    setStatus("Nothing was sent: this demo form goes nowhere.");
  }

  return (
    <form className="contact-form" data-contact-form onSubmit={onSubmit} aria-labelledby="contact-form-heading">
      <h2 id="contact-form-heading">Send us a message</h2>
      <div className="field">
        <label htmlFor="contact-name">Name (required)</label>
        <input id="contact-name" name="name" type="text" autoComplete="name" maxLength={200} required />
      </div>
      <div className="field">
        <label htmlFor="contact-email">Email (required)</label>
        <input id="contact-email" name="email" type="email" autoComplete="email" maxLength={320} required />
      </div>
      <div className="field">
        <label htmlFor="contact-organisation">Organisation (optional)</label>
        <input id="contact-organisation" name="organisation" type="text" autoComplete="organization" maxLength={200} />
      </div>
      <div className="field">
        <label htmlFor="contact-message">Message (required, up to 2,000 characters)</label>
        <textarea id="contact-message" name="message" rows={6} maxLength={2000} required />
      </div>
      <button type="submit" className="button">
        Send
      </button>
      <p className="form-status" role="status">
        {status}
      </p>
    </form>
  );
}
